#!/usr/bin/env bash
# deploy/run.sh: install what is missing, build the broker (Release), and run
# a single-node broker on localhost:9092 with its data under ./data and
# Prometheus metrics on :9644/metrics. Ctrl-C stops it cleanly (flush,
# checkpoints, clean-shutdown marker).
#
# Extra arguments go to the broker, e.g.:
#   deploy/run.sh --override num.partitions=8
# Environment variables work as with the Kafka images (KAFKA_NUM_PARTITIONS=8).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

deploy/install-deps.sh --build-only
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build build/release --target ciuickafka

mkdir -p "$ROOT/data"
echo "run.sh: starting ciuickafka on localhost:9092 (data: $ROOT/data, metrics: http://localhost:9644/metrics)"
exec build/release/bin/ciuickafka \
  --override listeners=PLAINTEXT://localhost:9092 \
  --override advertised.listeners=PLAINTEXT://localhost:9092 \
  --override "log.dirs=$ROOT/data" \
  --override ciuic.metrics.listener=0.0.0.0:9644 \
  "$@"
