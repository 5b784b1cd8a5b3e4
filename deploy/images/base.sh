#!/usr/bin/env bash
# deploy/images/base.sh: makes the local debian:bookworm-slim image when no
# registry can be reached (the compose test's case; see
# ../shared/design/containers.md).
#
# The Dockerfiles say `FROM debian:bookworm-slim`. Users pull that from Docker
# Hub; here nothing can be pulled, so this script bootstraps a minimal Debian 12
# root file system with debootstrap from the machine's own apt mirror, imports
# it with `podman import`, and tags it with the name the Dockerfiles use, so the
# same Dockerfiles build in both places. Does nothing if the image exists.
# Takes a few minutes (it downloads ~90 packages); needs root and debootstrap.
set -euo pipefail

TAG=docker.io/library/debian:bookworm-slim
if podman image exists "$TAG"; then
  echo "base.sh: $TAG already present"
  exit 0
fi

# The mirror the host's apt uses (deb822 sources first, then sources.list).
mirror=""
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
  [ -f "$f" ] || continue
  mirror=$(awk '/^URIs:/ { print $2; exit } /^deb / && $0 !~ /security/ { print $2; exit }' "$f")
  [ -n "$mirror" ] && break
done
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d /var/tmp/ck-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "base.sh: debootstrap bookworm from $mirror (a few minutes)"
debootstrap --variant=minbase bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  exit 1
}

# Same apt sources as the host (so images install the same package versions the
# broker was built against), no caches, and the slim images' dpkg exclusions.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$work/root/etc/apt/sources.list.d/debian.sources"
  : >"$work/root/etc/apt/sources.list"
fi
cat >"$work/root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
CFG
cat >"$work/root/etc/apt/apt.conf.d/docker-clean" <<'CFG'
APT::Install-Recommends "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
CFG
rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"* \
  "$work/root/usr/share/doc" "$work/root/usr/share/man" "$work/root/usr/share/info"

tar -C "$work/root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$TAG" >/dev/null
echo "base.sh: imported $TAG ($(podman image inspect --format '{{.Size}}' "$TAG") bytes)"
