#!/usr/bin/env bash
# deploy/run.sh: install what is missing, build the broker (Release), and run
# a single-node broker on localhost:9092 with its data under ./data and
# Prometheus metrics on localhost:9644/metrics. Ctrl-C stops it cleanly
# (flush, checkpoints, clean-shutdown marker).
#
# Extra arguments go to the broker and win over the defaults here, e.g.:
#   deploy/run.sh --override num.partitions=8
#   deploy/run.sh --override listeners=PLAINTEXT://localhost:9093 \
#                 --override ciuic.metrics.listener=127.0.0.1:9645
# The broker advertises what it listens on unless advertised.listeners is
# given, so a broker moved to another port tells clients that port.
# Environment variables work as with the Kafka images (KAFKA_NUM_PARTITIONS=8).
# DATA_DIR overrides ./data; CIUIC_BIN runs that binary instead of building
# (the tests use it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DATA_DIR=${DATA_DIR:-$ROOT/data}

if [[ -n "${CIUIC_BIN:-}" ]]; then
  BIN=$CIUIC_BIN
else
  deploy/install-deps.sh --build-only
  cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
  cmake --build build/release --target ciuickafka
  BIN=build/release/bin/ciuickafka
fi

mkdir -p "$DATA_DIR"
echo "run.sh: starting ciuickafka (defaults: localhost:9092, data: $DATA_DIR, metrics: http://localhost:9644/metrics; arguments: $*)"
# The metrics endpoint binds the loopback address, as the listener does.
exec "$BIN" \
  --override listeners=PLAINTEXT://localhost:9092 \
  --override "log.dirs=$DATA_DIR" \
  --override ciuic.metrics.listener=127.0.0.1:9644 \
  "$@"
