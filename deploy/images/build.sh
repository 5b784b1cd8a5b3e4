#!/usr/bin/env bash
# deploy/images/build.sh: builds every image the compose stack needs, locally.
#
#   deploy/images/build.sh [--broker-bin PATH] [--only ciuickafka]
#
# - debian:bookworm-slim: pulled if a registry is reachable, else made by
#   base.sh (debootstrap from the host's apt mirror);
# - ciuickafka:latest: deploy/Dockerfile over a staging directory holding the
#   broker (default build/compose/bin/ciuickafka, a Release build) and
#   ciuickafka-health (compiled here with g++ from deploy/healthcheck/);
# - localhost/ciuickafka-zookeeper:local, localhost/ciuickafka-prometheus:local
#   (stand-ins for the official images, from Debian packages) and
#   ciuickafka-tools:latest (kcat, for a client inside the compose network).
# Images that already exist are kept unless --rebuild is given or their build
# context changed (each image carries a hash of its context as the label
# ck.context-hash); the broker image is always rebuilt: its binary changes. Uses podman; docker works too
# if CK_ENGINE=docker.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
ENGINE=${CK_ENGINE:-podman}
broker_bin=$ROOT/build/compose/bin/ciuickafka
only=""
rebuild=0
while [ $# -gt 0 ]; do
  case "$1" in
    --broker-bin) broker_bin=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

context_hash() {  # context_hash CONTEXT DOCKERFILE: one hash of every file that goes into the image
  { find "$1" -type f -print0 | sort -z | xargs -0 sha256sum; sha256sum "$2"; } | sha256sum | cut -c1-16
}

build() {  # build TAG CONTEXT [DOCKERFILE]
  local tag=$1 ctx=$2 file=${3:-$2/Dockerfile}
  local hash
  hash=$(context_hash "$ctx" "$file")
  if [ "$rebuild" = 0 ] && [ "$tag" != ciuickafka:latest ] && $ENGINE image exists "$tag" 2>/dev/null \
     && [ "$($ENGINE image inspect --format '{{index .Labels "ck.context-hash"}}' "$tag" 2>/dev/null)" = "$hash" ]; then
    echo "build.sh: $tag already present"
    return
  fi
  local t0=$SECONDS
  local fmt=()
  [ "$ENGINE" = podman ] && fmt=(--format docker)  # keep HEALTHCHECK
  # One log per build: the builds below run side by side in subshells, where
  # $$ is still the parent's pid, so a shared name lost the failing log.
  local log
  log=$(mktemp /tmp/ck-build.XXXXXX)
  if ! $ENGINE build "${fmt[@]}" -q --label "ck.context-hash=$hash" -t "$tag" -f "$file" "$ctx" >"$log" 2>&1; then
    tail -30 "$log" >&2
    rm -f "$log"
    echo "build.sh: building $tag failed" >&2
    return 1
  fi
  rm -f "$log"
  echo "build.sh: built $tag in $((SECONDS - t0))s"
}

# Base image: the registry's if reachable, else bootstrap it.
if ! $ENGINE image exists docker.io/library/debian:bookworm-slim 2>/dev/null; then
  timeout 60 $ENGINE pull -q docker.io/library/debian:bookworm-slim >/dev/null 2>&1 || deploy/images/base.sh
fi

# The broker image: stage the two binaries as the whole build context.
[ -x "$broker_bin" ] || { echo "build.sh: no broker binary at $broker_bin (build the ciuickafka target in Release first)" >&2; exit 1; }
stage=$ROOT/build/compose-image
rm -rf "$stage" && mkdir -p "$stage"
cp "$broker_bin" "$stage/ciuickafka"
strip "$stage/ciuickafka" 2>/dev/null || true
g++ -std=c++20 -O2 -Wall -Wextra -Werror -o "$stage/ciuickafka-health" deploy/healthcheck/ciuickafka_health.cc
strip "$stage/ciuickafka-health"

pids=()
if [ -z "$only" ] || [ "$only" = ciuickafka ]; then
  build ciuickafka:latest "$stage" deploy/Dockerfile & pids+=($!)
fi
if [ -z "$only" ]; then
  # Independent and mostly downloading: build them side by side.
  build localhost/ciuickafka-zookeeper:local deploy/images/zookeeper & pids+=($!)
  build localhost/ciuickafka-prometheus:local deploy/images/prometheus & pids+=($!)
  build ciuickafka-tools:latest deploy/images/tools & pids+=($!)
fi
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
