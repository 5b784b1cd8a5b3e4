#!/usr/bin/env bash
# tests/bench/run_broker_bench.sh: the broker benchmark of issue #4 in one go.
#
#   tests/bench/run_broker_bench.sh [broker_bench options, e.g. --scale 0.2 --only produce,fetch]
#
# Builds ciuickafka and broker_bench in Release (build/bench, or $BUILD_DIR;
# SKIP_BUILD=1 to skip), measures loopback TCP bandwidth with iperf3 (1 and
# 8 streams), starts the broker on free 127.0.0.1 ports with a temp data dir
# (under $BENCH_TMPDIR, default /tmp), runs broker_bench (raw disk writes,
# then produce/fetch/fan-out/latency phases against the broker) and stops
# the broker with SIGTERM. Everything stays on 127.0.0.1; about 3-4 minutes.
# BENCH_READ_LIMIT="MAJ:MIN BYTES_PER_S" (root, cgroup v1 blkio) limits the
# disk reads of the broker and of broker_bench to that rate on that block
# device (the data dir's disk, e.g. "254:0 200000000"): a slower disk for
# the cold-replay phase, whose reads this fast virtual disk serves at
# near page-cache speed.
# Not a test: it prints figures and met/not-met against the issue's targets.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build/bench}
BROKER=$BUILD/bin/ciuickafka
BENCH=$BUILD/bin/broker_bench

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  [ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" --target ciuickafka broker_bench -j"$(nproc)"
fi
for f in "$BROKER" "$BENCH"; do
  [ -x "$f" ] || { echo "run_broker_bench: $f missing (librdkafka-dev installed?)" >&2; exit 1; }
done

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

WORK=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/ck-broker-bench.XXXXXX")
BROKER_PID=""
IPERF_PID=""
CGROUP=""
cleanup() {
  [ -n "$IPERF_PID" ] && kill "$IPERF_PID" 2>/dev/null || true
  if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
    kill -KILL "$BROKER_PID" 2>/dev/null || true
  fi
  if [ -n "$CGROUP" ]; then
    wait 2>/dev/null || true
    rmdir "$CGROUP" 2>/dev/null || true
  fi
  [ "${KEEP:-0}" = 1 ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

echo "== $(date -u +%FT%TZ) on $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- loopback TCP (iperf3) ----------------------------------------------------
LOOP1=0
LOOP8=0
if command -v iperf3 >/dev/null; then
  IPORT=$(free_port)
  iperf3 -s -B 127.0.0.1 -p "$IPORT" >/dev/null 2>&1 &
  IPERF_PID=$!
  sleep 0.5
  iperf_gbps() {  # streams -> Gbit/s received
    iperf3 -c 127.0.0.1 -p "$IPORT" -t 3 -P "$1" -J 2>/dev/null |
      /usr/bin/python3 -c 'import json,sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))' ||
      echo 0
  }
  LOOP1=$(iperf_gbps 1)
  LOOP8=$(iperf_gbps 8)
  kill "$IPERF_PID" 2>/dev/null || true
  wait "$IPERF_PID" 2>/dev/null || true
  IPERF_PID=""
  echo "== iperf3 loopback: 1 stream $LOOP1 Gbit/s, 8 streams $LOOP8 Gbit/s"
else
  echo "== iperf3 not installed (apt-get install iperf3): loopback ratios will read '-'"
fi

# ---- the broker -----------------------------------------------------------------
PORT=$(free_port)
MPORT=$(free_port)
mkdir -p "$WORK/data"
"$BROKER" --override node.id=0 \
  --override "listeners=PLAINTEXT://127.0.0.1:$PORT" \
  --override "log.dirs=$WORK/data" \
  --override "ciuic.metrics.listener=127.0.0.1:$MPORT" >"$WORK/broker.log" 2>&1 &
BROKER_PID=$!
for _ in $(seq 1 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  kill -0 "$BROKER_PID" 2>/dev/null || { echo "broker exited at startup:"; cat "$WORK/broker.log"; exit 1; }
  sleep 0.1
done
echo "== broker pid $BROKER_PID on 127.0.0.1:$PORT, data $WORK/data"
if [ -n "${BENCH_READ_LIMIT:-}" ]; then
  CGROUP=/sys/fs/cgroup/blkio/ck-broker-bench.$$
  mkdir "$CGROUP"
  echo "$BENCH_READ_LIMIT" >"$CGROUP/blkio.throttle.read_bps_device"
  echo "$BROKER_PID" >"$CGROUP/cgroup.procs"
  echo "== disk reads of the broker and broker_bench limited to '$BENCH_READ_LIMIT' (MAJ:MIN bytes/s, $CGROUP)"
fi

set +e
timeout 600 bash -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; exec "$@"' _ "$CGROUP" "$BENCH" run --brokers "127.0.0.1:$PORT" --pid "$BROKER_PID" --data-dir "$WORK/data" \
  --loopback1-gbps "$LOOP1" --loopback8-gbps "$LOOP8" "$@" 2>"$WORK/bench.stderr"
RC=$?
if [ -s "$WORK/bench.stderr" ]; then
  echo "== librdkafka/bench stderr: $(wc -l <"$WORK/bench.stderr") lines; distinct messages (first 10):"
  sed -E 's/^%[0-9]+\|[0-9.]+\|//; s/rdkafka#[a-z]+-[0-9]+/rdkafka/; s/\(after [0-9]+ms/(after N ms/' "$WORK/bench.stderr" |
    sort | uniq -c | sort -rn | head -n 10
fi
set -e

# ---- stop ---------------------------------------------------------------------------
if kill -0 "$BROKER_PID" 2>/dev/null; then
  T0=$(date +%s.%N)
  kill -TERM "$BROKER_PID"
  for _ in $(seq 1 300); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$BROKER_PID" 2>/dev/null; then
    echo "== broker did not stop within 30 s of SIGTERM; killed"
  else
    BRC=0
    wait "$BROKER_PID" || BRC=$?
    echo "== broker stopped on SIGTERM in $(/usr/bin/python3 -c "print('%.1f' % ($(date +%s.%N) - $T0))") s, exit $BRC"
  fi
else
  echo "== BROKER DIED during the run; last lines of its log:"
  tail -n 30 "$WORK/broker.log"
fi
if grep -qiE 'error|fatal|abort' "$WORK/broker.log"; then
  echo "== broker log lines mentioning errors (first 10):"
  grep -iE 'error|fatal|abort' "$WORK/broker.log" | head -n 10
fi
exit $RC
