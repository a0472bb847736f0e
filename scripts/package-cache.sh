#!/usr/bin/env bash
# The package cache of the test containers and VMs, kept between runs on this machine in
# GPULAB_PACKAGE_CACHE_DIR (default /var/cache/gpulab/packages):
#   apt/  apt-cacher-ng's store. apt-cacher-ng listens on 127.0.0.1:3143, kept running by a loop;
#         scripts/package-relay.py listens on port 3142, where the images' apt finds it
#         (tests/images/node/apt-proxy-detect), and hands each connection to apt-cacher-ng, or to the
#         archive itself while apt-cacher-ng does not answer
#   pip/  pip's cache, mounted into the lab containers at /root/.cache/pip (playbooks/lab.yml)
# It only changes where the bytes come from, never what is installed.
#
#   package-cache.sh start      start what does not answer; one status line on stderr, and on stdout
#                               for the caller to export: GPULAB_PIP_CACHE=<dir or empty>,
#                               GPULAB_APT_CACHE=<port, empty when apt goes to the archive>,
#                               GPULAB_APT_CACHE_RESTARTS=<apt-cacher-ng restarts so far>
#   package-cache.sh check [N]  one line on stderr when the cache no longer answers, or apt-cacher-ng
#                               was restarted since N; exit 0 either way
#
# Nothing here fails a run: an unwritable directory, a taken port or a daemon that will not start
# gives one line saying so, and the containers download from the archive.
set -uo pipefail

dir=${GPULAB_PACKAGE_CACHE_DIR:-/var/cache/gpulab/packages}
port=3142        # fixed: the images' apt-proxy-detect looks here
cache_port=3143  # apt-cacher-ng, on loopback only
here=$(cd "$(dirname "$0")" && pwd)
detect=$here/../tests/images/node/apt-proxy-detect

say() { printf 'package cache: %s\n' "$*" >&2; }
answers() { GPULAB_APT_CACHE_HOST=127.0.0.1 GPULAB_APT_CACHE_PORT=${1:-$port} "$detect" | grep -q '^http://'; }
# shellcheck disable=SC2016  # $0 is expanded by the inner bash
port_taken() { timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$0' "$1" 2>/dev/null; }
relay_answers() {
  # shellcheck disable=SC2016  # $0 is expanded by the inner bash
  timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$0 && printf "GET /gpulab-package-relay HTTP/1.0\r\n\r\n" >&3 &&
    grep -q "gpulab package relay" <&3' "$port" 2>/dev/null
}
supervised() { [ -f "$dir/supervisor.pid" ] && kill -0 "$(cat "$dir/supervisor.pid")" 2>/dev/null; }
restarts() { if [ -f "$dir/log/restarts.log" ]; then wc -l <"$dir/log/restarts.log"; else echo 0; fi; }

writable() {
  mkdir -p "$1" 2>/dev/null && touch "$1/.writable" 2>/dev/null && rm -f "$1/.writable"
}

install_daemon() {
  command -v apt-cacher-ng >/dev/null && return 0
  # Keep the package's own service from starting with its distribution settings.
  local blocker=/usr/sbin/policy-rc.d placed=""
  if [ ! -e "$blocker" ]; then printf '#!/bin/sh\nexit 101\n' >"$blocker" && chmod +x "$blocker" && placed=1; fi
  "$here"/host-packages.sh apt-cacher-ng >/dev/null 2>&1
  local rc=$?
  [ -n "$placed" ] && rm -f "$blocker"
  return $rc
}

start_daemon() {  # apt-cacher-ng on loopback, restarted by a loop whenever it exits (each restart logged)
  mkdir -p "$dir/conf" "$dir/log"
  # A plain caching proxy: no remapping to other mirrors, every archive host fetched as named.
  cat >"$dir/conf/acng.conf" <<EOF
CacheDir: $dir/apt
LogDir: $dir/log
SupportDir: /usr/lib/apt-cacher-ng
Port: $cache_port
BindAddress: 127.0.0.1
ReportPage: acng-report.html
ExThreshold: 4
EOF
  # shellcheck disable=SC2016  # $0 and $1 are expanded by the inner bash
  nohup bash -c 'while :; do apt-cacher-ng -c "$0" ForeGround=1; echo "$(date -u +%FT%TZ) exited $?" >>"$1"; sleep 1; done' \
    "$dir/conf" "$dir/log/restarts.log" >>"$dir/log/daemon.log" 2>&1 &
  echo $! >"$dir/supervisor.pid"
}

start_relay() {
  nohup python3 "$here/package-relay.py" "$port" "$cache_port" >>"$dir/log/relay.log" 2>&1 &
}

wait_answers() {  # until apt-cacher-ng answers on its port, for up to 10 s
  local _
  for _ in $(seq 1 20); do answers && return 0; sleep 0.5; done
  return 1
}

start() {
  local pip="$dir/pip" apt="" note
  if ! writable "$dir/apt" || ! writable "$dir/log" || ! writable "$pip"; then
    say "$dir is not writable; containers download from the archive, pip runs without a cache"
    printf 'GPULAB_PIP_CACHE=\nGPULAB_APT_CACHE=\nGPULAB_APT_CACHE_RESTARTS=0\n'
    return 0
  fi
  if answers; then
    apt=$port note="apt-cacher-ng answers on port $port"
  elif ! relay_answers && port_taken "$port"; then
    note="port $port is taken by another program; containers download from the archive"
  elif ! answers "$cache_port" && port_taken "$cache_port"; then
    note="port $cache_port is taken by another program; containers download from the archive"
  elif ! install_daemon; then
    note="apt-cacher-ng could not be installed; containers download from the archive"
  else
    supervised || start_daemon
    relay_answers || start_relay
    if wait_answers; then
      apt=$port note="apt-cacher-ng started on port $port (store $dir/apt)"
    else
      note="apt-cacher-ng did not start (see $dir/log); containers download from the archive"
    fi
  fi
  say "$note; pip cache in $pip"
  printf 'GPULAB_PIP_CACHE=%s\nGPULAB_APT_CACHE=%s\nGPULAB_APT_CACHE_RESTARTS=%s\n' "$pip" "$apt" "$(restarts)"
}

check() {  # $1: restarts counted at the start of the run
  local now
  now=$(restarts)
  if ! answers; then
    say "apt-cacher-ng did not answer at the end of the run; apt fetched from the archive after it stopped"
  elif [ "$now" -gt "${1:-0}" ]; then
    say "apt-cacher-ng stopped $((now - ${1:-0})) time(s) during the run and was restarted; meanwhile apt fetched from the archive"
  fi
}

case "${1:-}" in
  start) start ;;
  check) check "${2:-0}" ;;
  *) echo "usage: $0 start|check [N]" >&2; exit 2 ;;
esac
