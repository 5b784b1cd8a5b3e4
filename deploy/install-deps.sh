#!/usr/bin/env bash
# deploy/install-deps.sh: installs every build and test dependency on Debian 12.
# Idempotent: packages already present are left alone, and apt is only asked
# when something is missing. Run as root (or with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Build: compiler toolchain and the design card's libraries.
BUILD_PKGS=(build-essential cmake ninja-build pkg-config ccache python3
  libboost-dev liburing-dev libzstd-dev liblz4-dev libsnappy-dev zlib1g-dev
  libprotobuf-dev protobuf-compiler prometheus-cpp-dev catch2 libisal-dev libzookeeper-mt-dev)
# Tests: clang and its sanitizer/libFuzzer runtimes (libclang-rt-14-dev, only
# a Recommends of clang, which --no-install-recommends leaves out), the real
# Kafka clients the tests drive, the
# broker benchmark's librdkafka and iperf3, Burrow (lag monitor), ZooKeeper
# (the cluster tests and Burrow run it standalone on 127.0.0.1) and kazoo, an
# independent ZooKeeper client the cluster tests read Kafka's znodes with;
# torch, numpy and prometheus_client for the training reader (deploy/training/).
# python3-venv: the venv of the chaos runs' pinned confluent-kafka (below).
# lld: the test builds link with it (CMakeLists.txt uses it when present).
# openjdk-17-jdk-headless and maven: the Java client programs and Kafka's own
# tools (tests/clients/java, below). python3-matplotlib: the chart of
# tests/bench/run_vs_kafka.py. gdb: a chaos run dumps the threads of a broker
# that stops answering (tests/chaos/run_chaos.py).
TEST_PKGS=(clang libclang-rt-14-dev lld kcat python3-confluent-kafka python3-kafka python3-lz4 python3-snappy
  python3-zstandard golang-go golang-github-shopify-sarama-dev
  python3-torch python3-numpy python3-prometheus-client python3-matplotlib
  librdkafka-dev iperf3 burrow zookeeper python3-kazoo python3-venv openjdk-17-jdk-headless maven gdb)

want=("${BUILD_PKGS[@]}")
if [ "${1:-}" != "--build-only" ]; then want+=("${TEST_PKGS[@]}"); fi
# Node.js and npm (for kafkajs): Debian's packages unless a node is already installed.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then want+=(nodejs npm); fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# kafkajs, pinned by the committed lock file.
if [ "${1:-}" != "--build-only" ] && [ -f tests/clients/package-lock.json ]; then
  if [ ! -d tests/clients/node_modules/kafkajs ]; then
    (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
# The chaos runs' client (tests/chaos/requirements.txt): a newer confluent-kafka
# than Debian's, pinned by hash, in its own venv. Kept while the installed
# version matches the pin; rebuilt otherwise.
if [ "${1:-}" != "--build-only" ]; then
  venv=build/chaos-venv
  pin=$(sed -n 's/^confluent-kafka==\([^ ]*\).*/\1/p' tests/chaos/requirements.txt)
  have=$("$venv/bin/python3" -c 'import importlib.metadata as m; print(m.version("confluent-kafka"))' 2>/dev/null || true)
  if [ "$have" != "$pin" ]; then
    echo "install-deps: confluent-kafka $pin into $venv"
    rm -rf "$venv"
    # Not fatal: without the venv the chaos runs use Debian's client and
    # chaos_cluster_short is not registered (tests/chaos/CMakeLists.txt).
    if ! { /usr/bin/python3 -m venv "$venv" &&
           "$venv/bin/python3" -m pip install -q --disable-pip-version-check --require-hashes \
             --only-binary=:all: --no-deps -r tests/chaos/requirements.txt; }; then
      rm -rf "$venv"
      echo "install-deps: WARNING: could not install tests/chaos/requirements.txt; the chaos runs use Debian's confluent-kafka" >&2
    fi
  fi
fi
# Today's Python clients (tests/clients/requirements.txt: confluent-kafka
# 2.x, the chaos runs' pin included from tests/chaos/requirements.txt, and
# kafka-python 3.x), pinned by hash, in build/clients-venv. Rebuilt when
# either requirements file changed since the venv was made. Not fatal:
# without it the *_2x/*_3x integration tests fail (they never skip).
if [ "${1:-}" != "--build-only" ]; then
  venv=build/clients-venv
  want_reqs=$(cat tests/clients/requirements.txt tests/chaos/requirements.txt)
  if [ "$(cat "$venv/.requirements" 2>/dev/null || true)" != "$want_reqs" ]; then
    echo "install-deps: tests/clients/requirements.txt into $venv"
    rm -rf "$venv"
    if /usr/bin/python3 -m venv "$venv" &&
       "$venv/bin/python3" -m pip install -q --disable-pip-version-check --require-hashes \
         --only-binary=:all: --no-deps -r tests/clients/requirements.txt; then
      printf '%s' "$want_reqs" > "$venv/.requirements"
    else
      rm -rf "$venv"
      echo "install-deps: WARNING: could not install tests/clients/requirements.txt; the confluent-kafka 2.x and kafka-python 3.x tests will fail" >&2
    fi
  fi
fi
# Today's Go clients (tests/clients/franz_it: franz-go with kadm;
# tests/clients/sarama_new_it: IBM/sarama): modules from the Go module proxy
# (GOPROXY as configured), checked against the committed go.sum
# (-mod=readonly), built into build/go/. They need Go >= 1.26 (their go.mod
# says why: the modules' own minimum), which Debian 12's golang-go (1.19) is
# not: a newer go first on PATH is used. Rebuilt when the sources are newer
# than the program. Not fatal: a missing program fails its test.
if [ "${1:-}" != "--build-only" ]; then
  for pair in franz_it:franz-it sarama_new_it:sarama-it; do
    src=tests/clients/${pair%%:*}
    out=build/go/${pair##*:}
    if [ -x "$out" ] && [ -z "$(find "$src" -type f -newer "$out" -print -quit)" ]; then
      continue
    fi
    echo "install-deps: go build $out"
    mkdir -p build/go
    if ! GOFLAGS=-mod=readonly go -C "$src" build -o "$PWD/$out" .; then
      rm -f "$out"
      echo "install-deps: WARNING: go build of $src failed (Go $(go env GOVERSION 2>/dev/null || echo missing); needs 1.26+); integration_go_* will fail" >&2
    fi
  done
fi
# The Java client programs and Apache Kafka's own tools (tests/clients/java),
# at the versions in tests/clients/java/versions: Maven resolves the pinned
# artifacts from Maven Central into build/m2, failing on a bad checksum (-C),
# and copies each classpath to build/java/KIND-VERSION/, which the tests run
# offline with `java -cp`. Rebuilt when anything under tests/clients/java is
# newer than the build's stamp. Not fatal: without a build the Java tests
# fail (they never skip), and every other test still runs.
if [ "${1:-}" != "--build-only" ]; then
  jv=tests/clients/java
  while read -r kind ver; do
    case "$kind" in clients) pom=$jv/pom.xml ;; tools) pom=$jv/tools/pom.xml ;; *) continue ;; esac
    out=build/java/$kind-$ver
    if [ -f "$out/.built" ] && [ -z "$(find "$jv" -type f -newer "$out/.built" -print -quit)" ]; then
      continue
    fi
    echo "install-deps: Maven build of $out"
    rm -rf "$out"
    if mvn -B -q -C -Dmaven.repo.local="$PWD/build/m2" -Dkafka.version="$ver" -Dkafka.tools.version="$ver" \
         -f "$pom" package; then
      touch "$out/.built"
    else
      echo "install-deps: WARNING: Maven build of $out failed; the Java client and Kafka tools tests will fail" >&2
    fi
  done < "$jv/versions"
fi
echo "install-deps: all dependencies present"
