#!/usr/bin/env bash
# deploy/compose-test.sh: the compose drop-in, tested for real (issue #6).
#
# Builds every image locally (no registry needed: deploy/images/build.sh), runs
# the root docker-compose.yml with podman-compose, and checks from the host:
#   1. the broker and ZooKeeper containers report healthy (their HEALTHCHECKs);
#      the broker runs as a non-root user;
#   2. the one-shot topic creator (`ciuickafka admin topics create`, run from
#      the broker image as $CK_ADMIN_IMAGE) exits 0 and deepseek-train-topic
#      has 8 partitions, one directory each in the volume;
#   3. `kcat -L` on the external listener lists broker 1 at localhost:PORT;
#   4. 10,000 keyed messages produced with kcat (acks=all) read back, all of
#      them, byte for byte, spread over the 8 partitions;
#   5. a client inside the compose network (kcat in the tools image) sees the
#      internal advertised listener (ciuickafka:29092) and reads all 10,000;
#   6. Prometheus, through its HTTP API, has up == 1 for the broker and a
#      non-zero bytes-in counter for the topic; every query of the Grafana
#      dashboard (deploy/grafana/) is valid PromQL and names a series the
#      broker exports;
#   7. `down` then `up` keeps the data (same 10,000 messages, topic creator
#      finds the topic already there);
#   8. `down -v` leaves no container, volume or network of the project.
# On any failure (or timeout) it prints the containers' logs and tears the
# stack down (trap). Images are kept as a cache unless --rmi is given.
#
# --cluster tests deploy/docker-compose.cluster.yml instead (issue #12):
#   1. ZooKeeper and three brokers healthy; the creator (`ciuickafka admin`)
#      makes the topic with 8 partitions, replication factor 3,
#      min.insync.replicas 2 (read back with `ciuickafka admin configs
#      describe`); kcat -L lists three brokers and every partition with
#      3 replicas, 3 in sync;
#   2. an idempotent acks=all producer and a consumer group (confluent-kafka
#      on the host, deploy/compose-cluster-clients.py) run while broker 2's
#      container is killed (SIGKILL), drops out of the metadata (leaderships
#      moved), stays down 10 s and is started again: every acknowledged
#      record is consumed by the group, and the group keeps consuming after
#      the kill;
#   3. the restarted broker is back in every ISR; Prometheus has up == 1 for
#      all three brokers;
#   4. down -v leaves nothing.
#
# Usage: deploy/compose-test.sh [--rmi] [--skip-build] [--cluster]
# Environment: CK_COMPOSE_TEST_TIMEOUT (whole run, seconds, default 1800:
# a fresh machine bootstraps a Debian base and builds four images first),
# CK_COMPOSE_PROJECT (default ckcompose-test). Needs root (podman, apt).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

# Bound the whole run: re-run under timeout(1); its SIGTERM reaches every
# child (own process group), so the EXIT trap below still cleans up.
if [ -z "${CK_COMPOSE_TEST_INNER:-}" ]; then
  export CK_COMPOSE_TEST_INNER=1
  exec timeout -k 60 "${CK_COMPOSE_TEST_TIMEOUT:-1800}" "$0" "$@"
fi

RMI=0
SKIP_BUILD=0
CLUSTER=0
for a in "$@"; do
  case "$a" in
    --rmi) RMI=1 ;;
    --skip-build) SKIP_BUILD=1 ;;
    --cluster) CLUSTER=1 ;;
    *) echo "compose-test: unknown argument $a" >&2; exit 2 ;;
  esac
done

PROJECT=${CK_COMPOSE_PROJECT:-ckcompose-test}
COMPOSE_FILE=$ROOT/docker-compose.yml
if [ "$CLUSTER" = 1 ]; then
  PROJECT=${CK_COMPOSE_PROJECT:-ckcompose-cluster-test}
  COMPOSE_FILE=$ROOT/deploy/docker-compose.cluster.yml
fi
TOPIC=deepseek-train-topic
N=10000
T0=$SECONDS
phase_start=$SECONDS
log() { echo "compose-test [$((SECONDS - T0))s]: $*"; }
phase() { log "$1 (previous phase $((SECONDS - phase_start))s)"; phase_start=$SECONDS; }
fail() { echo "compose-test: FAIL: $*" >&2; exit 1; }

# --- 0. Dependencies (containers.md recipe) ------------------------------------
need=()
for p in podman buildah runc podman-compose golang-github-containernetworking-plugin-dnsname \
         debootstrap kcat curl g++ cmake ninja-build; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ ! -f /etc/containers/containers.conf ]; then
  # podman's default ulimits exceed the sandbox's hard limits and crun fails on
  # its cgroup setup; runc without default ulimits works.
  mkdir -p /etc/containers
  printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n' >/etc/containers/containers.conf
fi

# --- Free host ports, images, compose invocation -------------------------------
read -r KAFKA_HOST_PORT METRICS_HOST_PORT PROMETHEUS_HOST_PORT ZOOKEEPER_HOST_PORT \
        KAFKA_HOST_PORT_1 KAFKA_HOST_PORT_2 KAFKA_HOST_PORT_3 \
        METRICS_HOST_PORT_1 METRICS_HOST_PORT_2 METRICS_HOST_PORT_3 < <(
  /usr/bin/python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(10)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
EOF
)
export KAFKA_HOST_PORT METRICS_HOST_PORT PROMETHEUS_HOST_PORT ZOOKEEPER_HOST_PORT \
       KAFKA_HOST_PORT_1 KAFKA_HOST_PORT_2 KAFKA_HOST_PORT_3 METRICS_HOST_PORT_1 METRICS_HOST_PORT_2 METRICS_HOST_PORT_3
export CIUICKAFKA_IMAGE=localhost/ciuickafka:latest
export ZOOKEEPER_IMAGE=localhost/ciuickafka-zookeeper:local
export PROMETHEUS_IMAGE=localhost/ciuickafka-prometheus:local
export KAFKA_TOOLS_IMAGE=localhost/ciuickafka-tools:latest
# The topic creator runs `ciuickafka admin` from the broker image.
export CK_ADMIN_IMAGE=$CIUICKAFKA_IMAGE
NET=${PROJECT}_default
BROKER=${PROJECT}_ciuickafka_1
ZK=${PROJECT}_zookeeper_1
CREATOR=${PROJECT}_create-topic_1
BOOT=localhost:$KAFKA_HOST_PORT
PROM=http://127.0.0.1:$PROMETHEUS_HOST_PORT

compose() { timeout 180 podman-compose -p "$PROJECT" -f "$COMPOSE_FILE" "$@" >>"$WORK/compose.log" 2>&1; }

WORK=$(mktemp -d /tmp/ck-compose-test.XXXXXX)
volumes_before=$(podman volume ls -q | sort)
passed=0
cleanup() {
  local rc=$?
  set +e
  if [ "$passed" != 1 ]; then
    echo "compose-test: FAILED after $((SECONDS - T0))s; container logs follow" >&2
    for c in $(podman ps -a --format '{{.Names}}' --filter "label=io.podman.compose.project=$PROJECT"); do
      echo "---- $c (last 40 lines)" >&2
      podman logs --tail 40 "$c" >&2 2>&1
    done
    echo "---- podman-compose output (last 30 lines)" >&2
    tail -30 "$WORK/compose.log" >&2
    timeout 120 podman-compose -p "$PROJECT" -f "$COMPOSE_FILE" down -v -t 5 >/dev/null 2>&1
    podman network rm "$NET" >/dev/null 2>&1
  fi
  if [ "$RMI" = 1 ]; then
    podman rmi -f "$CIUICKAFKA_IMAGE" "$ZOOKEEPER_IMAGE" "$PROMETHEUS_IMAGE" "$KAFKA_TOOLS_IMAGE" \
      docker.io/library/debian:bookworm-slim >/dev/null 2>&1
  fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# A leftover stack of an interrupted run would hold the names.
if podman ps -a -q --filter "label=io.podman.compose.project=$PROJECT" | grep -q .; then
  log "removing a leftover $PROJECT stack"
  compose down -v -t 5 || true
  podman network rm "$NET" >/dev/null 2>&1 || true
fi

# --- Build ----------------------------------------------------------------------
phase "building the broker and the images"
if [ "$SKIP_BUILD" = 0 ]; then
  cmake -S . -B build/compose -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
  cmake --build build/compose --target ciuickafka -j"$(nproc)" >"$WORK/build.log" 2>&1 \
    || { tail -30 "$WORK/build.log"; fail "building ciuickafka"; }
  deploy/images/build.sh --broker-bin build/compose/bin/ciuickafka
fi
missing=$(podman run --rm --entrypoint ldd "$CIUICKAFKA_IMAGE" /usr/local/bin/ciuickafka | grep "not found" || true)
[ -z "$missing" ] || fail "the image lacks libraries: $missing"
podman image inspect --format '{{.Config.Healthcheck}}' "$CIUICKAFKA_IMAGE" | grep -q ciuickafka-health \
  || fail "the image has no HEALTHCHECK (built without --format docker?)"

# --- Helpers ------------------------------------------------------------------------
wait_healthy() {  # wait_healthy CONTAINER SECONDS
  local c=$1 deadline=$((SECONDS + $2))
  # podman runs HEALTHCHECKs from systemd timers; without systemd (containers
  # here) the test runs the image's check itself, exactly as configured.
  until timeout 15 podman healthcheck run "$c" >/dev/null 2>&1; do
    [ "$(podman inspect --format '{{.State.Running}}' "$c" 2>/dev/null)" = true ] || fail "$c is not running"
    [ $SECONDS -lt $deadline ] || fail "$c not healthy within $2s"
    sleep 2
  done
}

wait_creator() {  # the one-shot topic creator must exit 0
  local code
  code=$(timeout 180 podman wait "$CREATOR") || fail "topic creator did not finish within 180s"
  [ "$code" = 0 ] || fail "topic creator exited $code: $(podman logs "$CREATOR" 2>&1 | tail -5)"
  podman logs "$CREATOR" 2>&1 | tail -2 | sed 's/^/    /'
}

consume_all() {  # consume_all BOOTSTRAP OUTFILE [kcat prefix...]: every message of the topic as key:value
  local boot=$1 out=$2
  shift 2
  timeout 120 "${@:-kcat}" -C -b "$boot" -t "$TOPIC" -o beginning -e -q -f '%k:%s\n' >"$out" \
    || fail "consuming from $boot failed"
}

prom_value() {  # prom_value QUERY: first sample's value, or empty
  curl -sf --max-time 5 "$PROM/api/v1/query" --data-urlencode "query=$1" \
    | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null || true
}

# --- --cluster: the three-broker stack ------------------------------------------
if [ "$CLUSTER" = 1 ]; then
  BOOT3=localhost:$KAFKA_HOST_PORT_1,localhost:$KAFKA_HOST_PORT_2,localhost:$KAFKA_HOST_PORT_3
  B1=${PROJECT}_ciuickafka-1_1 B2=${PROJECT}_ciuickafka-2_1 B3=${PROJECT}_ciuickafka-3_1
  isr_full() {  # every partition of the topic lists 3 replicas and 3 in sync
    timeout 30 kcat -b "$BOOT3" -L -t "$TOPIC" >"$WORK/metadata" 2>/dev/null || return 1
    [ "$(grep -cE 'replicas: [0-9]+,[0-9]+,[0-9]+, isrs: [0-9]+,[0-9]+,[0-9]+$' "$WORK/metadata")" = 8 ]
  }
  phase "podman-compose up (cluster)"
  compose up -d || fail "podman-compose up"
  wait_healthy "$ZK" 120
  for b in "$B1" "$B2" "$B3"; do wait_healthy "$b" 90; done
  log "zookeeper and three brokers healthy"
  wait_creator
  deadline=$((SECONDS + 60))
  until isr_full; do
    [ $SECONDS -lt $deadline ] || { cat "$WORK/metadata"; fail "$TOPIC: not 8 partitions with 3 replicas in sync"; }
    sleep 1
  done
  brokers=$(grep -cE "^ +broker [123] at localhost:" "$WORK/metadata" || true)
  [ "$brokers" = 3 ] || { cat "$WORK/metadata"; fail "kcat -L lists $brokers brokers, not 3"; }
  log "kcat -L: 3 brokers, $TOPIC with 8 partitions, 3 replicas each, all in sync"
  timeout 60 podman run --rm --network "$NET" --entrypoint /usr/local/bin/ciuickafka "$CK_ADMIN_IMAGE" \
      admin --bootstrap-server=ciuickafka-1:29092 configs describe --topic="$TOPIC" >"$WORK/topic-configs" 2>&1 \
    || { cat "$WORK/topic-configs"; fail "ciuickafka admin configs describe --topic=$TOPIC"; }
  grep -qE "^min\.insync\.replicas +2 +DYNAMIC_TOPIC_CONFIG" "$WORK/topic-configs" \
    || { cat "$WORK/topic-configs"; fail "$TOPIC: min.insync.replicas is not 2 (a topic config)"; }
  log "ciuickafka admin configs describe: $TOPIC has min.insync.replicas 2"

  phase "producer and consumer group running, broker 2 killed and restarted"
  /usr/bin/python3 "$ROOT/deploy/compose-cluster-clients.py" --bootstrap "$BOOT3" --topic "$TOPIC" \
      --records 20000 --work "$WORK" >"$WORK/clients.log" 2>&1 &
  clients=$!
  deadline=$((SECONDS + 120))
  until [ -f "$WORK/consumed-1000" ]; do  # the group consumed its first 1,000
    kill -0 $clients 2>/dev/null || { cat "$WORK/clients.log"; fail "the clients exited early"; }
    [ $SECONDS -lt $deadline ] || { cat "$WORK/clients.log"; fail "the group consumed nothing within 120s"; }
    sleep 1
  done
  t_kill=$SECONDS
  podman kill --signal KILL "$B2" >/dev/null || fail "podman kill $B2"
  log "killed $B2 (SIGKILL) with the producer and the group running"
  # Down for real: its registration expires (session timeout), the
  # controller moves its leaderships; it stays down while the clients run.
  deadline=$((SECONDS + 60))
  until timeout 30 kcat -b "$BOOT3" -L -t "$TOPIC" >"$WORK/metadata" 2>/dev/null \
        && ! grep -qE "broker 2 at|leader 2," "$WORK/metadata"; do
    [ $SECONDS -lt $deadline ] || { cat "$WORK/metadata"; fail "broker 2 still registered or leading 60s after the kill"; }
    sleep 0.5
  done
  log "broker 2 gone from the metadata and leading nothing $((SECONDS - t_kill))s after the kill"
  sleep 10  # not a wait for an event: the time the broker stays down while the clients run
  podman start "$B2" >/dev/null || fail "podman start $B2"
  wait_healthy "$B2" 120
  deadline=$((SECONDS + 120))
  until isr_full; do
    [ $SECONDS -lt $deadline ] || { cat "$WORK/metadata"; fail "$B2 not back in every ISR within 120s"; }
    sleep 1
  done
  log "$B2 restarted and back in every ISR $((SECONDS - t_kill))s after the kill"
  wait $clients || { tail -30 "$WORK/clients.log"; fail "the clients failed"; }
  tail -3 "$WORK/clients.log" | sed 's/^/    /'

  deadline=$((SECONDS + 90))
  until [ "$(prom_value 'count(up{job="ciuickafka"} == 1)')" = 3 ]; do
    [ $SECONDS -lt $deadline ] || fail "Prometheus: $(prom_value 'count(up{job="ciuickafka"} == 1)') of 3 brokers up"
    sleep 2
  done
  log "Prometheus: up == 1 for all three brokers"

  phase "down -v"
  compose down -v -t 20 || fail "podman-compose down -v"
  podman network rm "$NET" >/dev/null 2>&1 || true
  left=$(podman ps -a -q --filter "label=io.podman.compose.project=$PROJECT")
  [ -z "$left" ] || fail "containers left after down -v: $left"
  new_volumes=$(comm -13 <(echo "$volumes_before") <(podman volume ls -q | sort))
  [ -z "$new_volumes" ] || fail "volumes left after down -v: $new_volumes"
  passed=1
  phase "done"
  log "PASS (cluster) in $((SECONDS - T0))s"
  exit 0
fi

seq 1 "$N" | sed 's/.*/k&:message-&-of-the-training-stream/' >"$WORK/expected"

# --- 1-2. Up, healthy, topic created -------------------------------------------
phase "podman-compose up"
compose up -d || fail "podman-compose up"
wait_healthy "$ZK" 120
wait_healthy "$BROKER" 90
log "zookeeper and ciuickafka healthy"
uid=$(podman exec "$BROKER" id -u)
[ "$uid" != 0 ] || fail "the broker runs as root"
wait_creator
dirs=$(podman exec "$BROKER" ls /var/lib/kafka/data | grep -c "^$TOPIC-[0-9]*$" || true)
[ "$dirs" = 8 ] || fail "expected 8 partition directories in /var/lib/kafka/data, found $dirs"

# --- 3. kcat -L on the external listener ------------------------------------------
phase "checks from the host"
timeout 30 kcat -b "$BOOT" -L -t "$TOPIC" >"$WORK/metadata" || fail "kcat -L on $BOOT"
grep -q "broker 1 at localhost:$KAFKA_HOST_PORT" "$WORK/metadata" || { cat "$WORK/metadata"; fail "kcat -L does not list broker 1 at $BOOT"; }
grep -q "topic \"$TOPIC\" with 8 partitions" "$WORK/metadata" || { cat "$WORK/metadata"; fail "$TOPIC does not have 8 partitions"; }
log "kcat -L: broker 1 at $BOOT, $TOPIC with 8 partitions"

# --- 4. Produce 10,000, read them all back ----------------------------------------
timeout 120 kcat -P -b "$BOOT" -t "$TOPIC" -K: -X acks=all -X linger.ms=5 <"$WORK/expected" \
  || fail "producing $N messages"
consume_all "$BOOT" "$WORK/got"
sort "$WORK/got" | diff -q - <(sort "$WORK/expected") >/dev/null \
  || fail "read back $(wc -l <"$WORK/got") messages, not the $N produced (or different bytes)"
parts=$(timeout 120 kcat -C -b "$BOOT" -t "$TOPIC" -o beginning -e -q -f '%p\n' | sort -u | wc -l)
[ "$parts" = 8 ] || fail "messages landed in $parts partitions, expected all 8"
log "produced and read back $N messages over 8 partitions"

# --- 5. A client inside the compose network -------------------------------------
timeout 60 podman run --rm --network "$NET" "$KAFKA_TOOLS_IMAGE" kcat -b ciuickafka:29092 -L -t "$TOPIC" \
  >"$WORK/metadata-internal" 2>&1 || { cat "$WORK/metadata-internal"; fail "kcat -L inside the compose network"; }
grep -q "broker 1 at ciuickafka:29092" "$WORK/metadata-internal" \
  || { cat "$WORK/metadata-internal"; fail "the internal listener is not advertised as ciuickafka:29092"; }
consume_all ciuickafka:29092 "$WORK/got-internal" podman run --rm --network "$NET" "$KAFKA_TOOLS_IMAGE" kcat
[ "$(wc -l <"$WORK/got-internal")" = "$N" ] || fail "internal client read $(wc -l <"$WORK/got-internal") of $N"
log "internal client: broker 1 at ciuickafka:29092, read $N messages"

# --- 6. Prometheus ---------------------------------------------------------------------
deadline=$((SECONDS + 90))
until [ "$(prom_value 'up{job="ciuickafka"}')" = 1 ] && \
      [ -n "$(prom_value "kafka_server_brokertopicmetrics_bytesin_total{topic=\"$TOPIC\"} > 0")" ]; do
  [ $SECONDS -lt $deadline ] || fail "Prometheus: up=$(prom_value 'up{job="ciuickafka"}'), bytes in=$(prom_value "kafka_server_brokertopicmetrics_bytesin_total{topic=\"$TOPIC\"}")"
  sleep 2
done
log "Prometheus: up == 1, bytes in for $TOPIC = $(prom_value "kafka_server_brokertopicmetrics_bytesin_total{topic=\"$TOPIC\"}")"
curl -sf --max-time 5 "http://127.0.0.1:$METRICS_HOST_PORT/metrics" >"$WORK/metrics" || fail "GET /metrics on the host port"
/usr/bin/python3 - "$ROOT/deploy/grafana/ciuickafka-broker.json" "$PROM" "$WORK/metrics" "$ROOT/metrics/README.md" <<'EOF' || fail "the Grafana dashboard does not match the broker's metrics"
# Each dashboard query must be valid PromQL (Prometheus answers "success") and
# every metric it names must be in the broker's /metrics now, or be a labelled
# series of metrics/README.md's catalogue that appears on first use (the
# per-error counter, before any error).
import json, re, sys, urllib.parse, urllib.request
dash, prom, metrics = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
exported = set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", metrics, re.M)) | {"up"}
catalogue = set(re.findall(r"^\| `([a-z_]+)` \|", open(sys.argv[4]).read(), re.M))
exported |= {n + s for n in catalogue for s in ("", "_bucket", "_sum", "_count")}
bad = []
for p in json.load(open(dash))["panels"]:
    for t in p["targets"]:
        q = t["expr"].replace("$job", "ciuickafka").replace("$instance", ".*")
        url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            status = json.load(urllib.request.urlopen(url, timeout=5))["status"]
        except Exception as e:
            status = str(e)
        if status != "success":
            bad.append(f"{p['title']}: {q}: {status}")
        for name in re.findall(r"\b((?:kafka|process)_[a-z0-9_]+)", q):
            if name not in exported:
                bad.append(f"{p['title']}: {name} is not exported by the broker")
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
log "Grafana dashboard: every query valid and names a series of the broker"

# --- 7. down, up: the data stays ---------------------------------------------------
phase "down and up again"
compose down -t 20 || fail "podman-compose down"
podman volume exists "${PROJECT}_kafka-data" || fail "down removed the kafka-data volume"
compose up -d || fail "podman-compose up (second time)"
wait_healthy "$ZK" 120
wait_healthy "$BROKER" 90
wait_creator
consume_all "$BOOT" "$WORK/got-again"
sort "$WORK/got-again" | diff -q - <(sort "$WORK/expected") >/dev/null \
  || fail "after down/up: read back $(wc -l <"$WORK/got-again") messages, not the $N produced"
log "after down/up: all $N messages still there"

# --- 8. down -v cleans everything --------------------------------------------------
phase "down -v"
compose down -v -t 20 || fail "podman-compose down -v"
# podman-compose 1.0.3 leaves the project's network behind; docker compose
# removes it. Remove it here so the stack leaves nothing.
podman network rm "$NET" >/dev/null 2>&1 || true
left=$(podman ps -a -q --filter "label=io.podman.compose.project=$PROJECT")
[ -z "$left" ] || fail "containers left after down -v: $left"
new_volumes=$(comm -13 <(echo "$volumes_before") <(podman volume ls -q | sort))
[ -z "$new_volumes" ] || fail "volumes left after down -v: $new_volumes"
! podman network exists "$NET" || fail "network $NET left"

passed=1
phase "done"
log "PASS in $((SECONDS - T0))s"
