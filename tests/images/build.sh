#!/usr/bin/env bash
# Build the systemd test image the lab and the Molecule scenarios run on.
#
#   GPULAB_IMAGE_SOURCE=auto|offline|registry  (default auto: registry only when one answers)
#   GPULAB_IMAGE_DISTRO=debian12|ubuntu2204|ubuntu2404  (registry path; offline is always debian12)
#   GPULAB_TEST_IMAGE=name:tag                 (default gpulab/debian12-systemd:2)
#   --force                                    rebuild even when the image is current
#
# The offline path needs only Debian's apt archive: debootstrap, then `docker import`.
# The image carries a label with its recipe's fingerprint (this script and the files it puts in
# the image); an image built from another recipe is rebuilt.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=mirror.sh
. "$here/mirror.sh"
image=${GPULAB_TEST_IMAGE:-gpulab/debian12-systemd:2}
source_kind=${GPULAB_IMAGE_SOURCE:-auto}
distro=${GPULAB_IMAGE_DISTRO:-debian12}
force=${1:-}
ca_bundle=/etc/ssl/certs/ca-certificates.crt
# Packages every scenario needs before Ansible can manage the node (sshd: the lab's transport).
packages=systemd,systemd-sysv,dbus,python3,python3-apt,sudo,iproute2,procps,ca-certificates,openssh-server

log() { printf 'build-image: %s\n' "$*" >&2; }

recipe=$(cat "$0" "$here/container-fixups.sh" "$here"/node/* "$here/Dockerfile.$distro" 2>/dev/null | sha256sum | cut -c1-16)
built=$(docker image inspect -f '{{ index .Config.Labels "gpulab.recipe" }}' "$image" 2>/dev/null || true)
if [ "$force" != "--force" ] && [ "$built" = "$recipe" ]; then
  log "$image is current (use --force to rebuild)"
  exit 0
fi

registry_answers() {
  local base
  case "$distro" in
    debian12) base=debian:12 ;; ubuntu2204) base=ubuntu:22.04 ;; ubuntu2404) base=ubuntu:24.04 ;;
    *) log "unknown GPULAB_IMAGE_DISTRO '$distro' (debian12, ubuntu2204, ubuntu2404)"; exit 2 ;;
  esac
  docker image inspect "$base" >/dev/null 2>&1 || timeout 30 docker pull -q "$base" >/dev/null 2>&1
}

build_registry() {
  log "registry path: building $image from tests/images/Dockerfile.$distro"
  local ctx
  ctx=$(mktemp -d)
  cp "$here/Dockerfile.$distro" "$ctx/Dockerfile"
  cp -r "$here/container-fixups.sh" "$here/node" "$ctx/"
  if [ -f "$ca_bundle" ]; then cp "$ca_bundle" "$ctx/ca-certificates.crt"; else : >"$ctx/ca-certificates.crt"; fi
  docker build -q --label "gpulab.recipe=$recipe" -t "$image" "$ctx" >/dev/null
  rm -rf "$ctx"
}

build_offline() {
  command -v debootstrap >/dev/null || {
    log "installing debootstrap"
    "$here"/../../scripts/host-packages.sh --with-recommends debootstrap
  }
  local mirror
  root=$(mktemp -d /var/tmp/gpulab-rootfs.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  mirror=$(mirror_uri)
  log "offline path: debootstrap bookworm from $mirror into $root"
  debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >/var/tmp/gpulab-debootstrap.log 2>&1 || {
    log "debootstrap failed; tail of /var/tmp/gpulab-debootstrap.log:"; tail -20 /var/tmp/gpulab-debootstrap.log >&2; exit 1; }

  # The machine's apt sources (so containers reach the same mirror) and its CA bundle
  # (HTTPS from containers fails certificate checks without it).
  rm -f "$root/etc/apt/sources.list"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
  else
    sed "s|@MIRROR@|$mirror|" "$here/debian.sources.in" >"$root/etc/apt/sources.list.d/debian.sources"
  fi
  if [ -f "$ca_bundle" ]; then
    cp "$ca_bundle" "$root/usr/local/share/ca-certificates/host-bundle.crt"
    chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
  fi
  "$here/container-fixups.sh" "$root"
  chroot "$root" apt-get update -qq >/dev/null
  apt_clean "$root"
  tar -C "$root" -c . | docker import \
    --change 'CMD ["/lib/systemd/systemd"]' \
    --change 'ENV container=docker' --change "LABEL gpulab.recipe=$recipe" - "$image" >/dev/null
  rm -rf "$root"
}

apt_clean() {
  # Package lists stay, as on an installed machine (check mode needs them); only downloads go.
  rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/cache/apt/*.bin
}

case "$source_kind" in
  registry) build_registry ;;
  offline) build_offline ;;
  auto)
    if registry_answers; then build_registry; else
      log "no container registry answers; using the offline path"
      build_offline
    fi ;;
  *) log "unknown GPULAB_IMAGE_SOURCE '$source_kind' (auto, offline, registry)"; exit 2 ;;
esac
log "built $image"
