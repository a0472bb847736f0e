# shellcheck shell=bash
# Sourced by the image builders (tests/images/build.sh, tests/kernel/vm.sh).
# The Debian mirror this machine uses: the first URI of its deb822 sources, else
# GPULAB_DEBIAN_MIRROR, else deb.debian.org.
mirror_uri() {
  local f=/etc/apt/sources.list.d/debian.sources
  if [ -f "$f" ] && grep -q '^URIs:' "$f"; then
    awk '/^URIs:/ {print $2; exit}' "$f"
  else
    echo "${GPULAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  fi
}
