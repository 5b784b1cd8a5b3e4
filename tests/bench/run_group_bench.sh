#!/usr/bin/env bash
# tests/bench/run_group_bench.sh: the consumer-group benchmark of issue #5.
#
#   tests/bench/run_group_bench.sh [group_bench options, e.g. --only commit --commit-seconds 10]
#
# Builds ciuickafka and group_bench in Release (build/bench, or $BUILD_DIR;
# SKIP_BUILD=1 to skip), starts the broker on a free 127.0.0.1 port with a
# temp data dir (under $BENCH_TMPDIR, default /tmp) and its default group
# settings (group.initial.rebalance.delay.ms=3000,
# ciuic.group.disconnect.grace.ms=3000, ciuic.acks.all.fsync=true), runs
# group_bench (rebalances of 16 members over 64 partitions, then 64 members
# committing every 100 ms for 20 s) and stops the broker with SIGTERM.
# About 1.5 minutes. Not a test: it prints figures.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build/bench}
BROKER=$BUILD/bin/ciuickafka
BENCH=$BUILD/bin/group_bench

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  [ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" --target ciuickafka group_bench -j"$(nproc)"
fi
for f in "$BROKER" "$BENCH"; do
  [ -x "$f" ] || { echo "run_group_bench: $f missing (librdkafka-dev installed?)" >&2; exit 1; }
done

PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
MPORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
WORK=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/ck-group-bench.XXXXXX")
BROKER_PID=""
cleanup() {
  if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then kill -KILL "$BROKER_PID" 2>/dev/null || true; fi
  [ "${KEEP:-0}" = 1 ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

echo "== $(date -u +%FT%TZ) on $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$WORK/data"
"$BROKER" --override node.id=0 \
  --override "listeners=PLAINTEXT://127.0.0.1:$PORT" \
  --override "log.dirs=$WORK/data" \
  --override "offsets.topic.num.partitions=50" \
  --override "ciuic.metrics.listener=127.0.0.1:$MPORT" >"$WORK/broker.log" 2>&1 &
BROKER_PID=$!
for _ in $(seq 1 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  kill -0 "$BROKER_PID" 2>/dev/null || { echo "broker exited at startup:"; cat "$WORK/broker.log"; exit 1; }
  sleep 0.1
done
echo "== broker pid $BROKER_PID on 127.0.0.1:$PORT"

set +e
timeout 400 "$BENCH" --brokers "127.0.0.1:$PORT" --pid "$BROKER_PID" "$@" 2>"$WORK/bench.stderr"
RC=$?
set -e
if [ -s "$WORK/bench.stderr" ]; then
  echo "== librdkafka/bench stderr: $(wc -l <"$WORK/bench.stderr") lines; first 5:"
  head -n 5 "$WORK/bench.stderr"
fi
if command -v curl >/dev/null; then
  echo "== rebalance metrics:"
  curl -s "http://127.0.0.1:$MPORT/metrics" | grep -E '^kafka_coordinator_rebalance' | head -n 10 || true
fi
kill -TERM "$BROKER_PID" 2>/dev/null || true
for _ in $(seq 1 300); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
exit $RC
