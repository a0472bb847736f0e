#!/usr/bin/env bash
# Install Debian packages on this machine (the build host), those of PKG... not installed yet.
#   scripts/host-packages.sh [--with-recommends] PKG...
# A mirror that answers 503 for a minute must not fail the suite (seen on deb.debian.org during a CI
# run, 2026-12-06): apt retries each download 10 times, backing off up to 30 s (about 3 minutes).
set -euo pipefail
recommends=--no-install-recommends
if [ "${1:-}" = --with-recommends ]; then recommends=--install-recommends && shift; fi
missing=()
for pkg in "$@"; do
  dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -gt 0 ] || exit 0
retries=(-o Acquire::Retries=10)
apt-get "${retries[@]}" update -qq
DEBIAN_FRONTEND=noninteractive apt-get "${retries[@]}" install -y -qq "$recommends" "${missing[@]}" >/dev/null
