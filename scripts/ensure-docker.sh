#!/usr/bin/env bash
# Make sure a Docker engine answers: install docker.io from the distribution when
# no engine is present, start dockerd in the background when none is running.
set -euo pipefail

log() { printf 'ensure-docker: %s\n' "$*" >&2; }

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  log "no Docker engine installed; installing docker.io from apt"
  "$(dirname "$0")"/host-packages.sh --with-recommends docker.io
fi

# Prefer systemd where it runs; build machines have no init, so fall back to a background dockerd.
if [ -d /run/systemd/system ] && systemctl start docker 2>/dev/null; then
  :
else
  log "starting dockerd in the background (log: /var/log/gpulab-dockerd.log)"
  nohup dockerd >/var/log/gpulab-dockerd.log 2>&1 &
fi

for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "engine answers"
    exit 0
  fi
  sleep 1
done
log "dockerd did not answer within 60 s; see /var/log/gpulab-dockerd.log"
exit 1
