#!/usr/bin/env bash
# Point apt in a test root filesystem (container image or VM image) at the package cache
# through apt-proxy-detect, which falls back to the archive when no cache answers.
set -euo pipefail
root=${1:?root directory}
here=$(cd "$(dirname "$0")" && pwd)
install -D -m 0755 "$here/apt-proxy-detect" "$root/usr/local/sbin/gpulab-apt-proxy"
# Retries: a download cut off when the cache dies is fetched again (the relay in front of the
# cache then takes it to the archive: scripts/package-relay.py).
cat >"$root/etc/apt/apt.conf.d/01gpulab-package-cache" <<'EOF'
Acquire::http::Proxy-Auto-Detect "/usr/local/sbin/gpulab-apt-proxy";
Acquire::Retries "5";
EOF
