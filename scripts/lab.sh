#!/usr/bin/env bash
# Create the container lab, run site.yml on it twice and print a summary:
# the first run builds the cluster, the second must change nothing.
#   --fresh   remove an existing lab first, then run site.yml --check --diff on the new one
#             before converging (what `make test-lab` does). The converge then leaves out the
#             benchmarks (--skip-tags validate_long): they run once, in the rerun, whose report
#             the lab tests read, and their tasks must change nothing there like every other.
set -euo pipefail
fresh=${1:-}
cd "$(dirname "$0")/.."
logdir=.cache/lab
mkdir -p "$logdir"
# The nodes' apt and pip go through the package cache (scripts/package-cache.sh), unless the caller started it.
if [ -z "${GPULAB_PIP_CACHE+set}" ]; then
  eval "$(scripts/package-cache.sh start)"
  export GPULAB_PIP_CACHE GPULAB_APT_CACHE
fi
# The training environment's wheels: torch's CPU wheel, DeepSpeed with its ops built once here.
if [ -z "${GPULAB_LAB_WHEELS+set}" ]; then
  eval "$(scripts/lab-wheels.sh)"
  export GPULAB_LAB_WHEELS
fi

# shellcheck source=scripts/run-log.sh
. scripts/run-log.sh

run_site() {  # $1: log name, then ansible-playbook options. Prints the elapsed seconds.
  # The whole output goes to the log; each play and role as it starts goes to stderr.
  local start end name=$1
  shift
  start=$(date +%s)
  echo "lab: site.yml $name (log: $logdir/$name.log)" >&2
  if ! ansible-playbook site.yml "$@" 2>&1 | scripts/progress.py "$logdir/$name.log" "$name"; then
    failures "$logdir/$name.log" >&2
    echo "lab: site.yml failed ($name); full log: $logdir/$name.log" >&2
    exit 1
  fi
  end=$(date +%s)
  echo $((end - start))
}

if [ "$fresh" = --fresh ]; then
  ansible-playbook playbooks/lab-destroy.yml >"$logdir/destroy.log" 2>&1 || { tail -30 "$logdir/destroy.log"; exit 1; }
fi
ansible-playbook playbooks/lab.yml >"$logdir/create.log" 2>&1 || { tail -30 "$logdir/create.log"; exit 1; }
if [ "$fresh" = --fresh ]; then
  check=$(run_site check --check --diff)
fi
converge_options=()
[ "$fresh" != --fresh ] || converge_options=(--skip-tags validate_long)
first=$(run_site converge "${converge_options[@]}")
second=$(run_site rerun)
nodes=$(ansible all --list-hosts | tail -n +2 | xargs)

echo
echo "gpulab lab: nodes: $nodes"
if [ -n "${check:-}" ]; then
  echo "  site.yml --check --diff on the fresh lab: ${check}s   (log: $logdir/check.log)"
fi
echo "  site.yml first run:  ${first}s   (log: $logdir/converge.log)"
echo "  site.yml second run: ${second}s   (log: $logdir/rerun.log)"
changed=$(changed_hosts "$logdir/rerun.log")
if [ -n "$changed" ]; then
  echo "  second run CHANGED something on: $changed (it must change nothing)" >&2
  exit 1
fi
echo "  second run: changed=0 on every host; where it spent its time, per role:"
scripts/run-profile.py "$logdir/rerun.log" | sed 's/^/    /'
echo "  use it: docker exec -it gpu1 bash | ansible all -m ping | make lab-destroy"
