#!/usr/bin/env bash
# The scale benchmark: the no-change rerun of site.yml on the 4-node lab, then on the same lab grown by
# EXTRA compute nodes, in one run, each rerun checked for changed=0.
#
#   scripts/scale-bench.sh [EXTRA] [RUNS]    (default 12 extra nodes: 16 in all; 1 rerun per size)
#
# The extra nodes (gpu3, gpu4, ...) are whole compute nodes (Slurm, CephFS, the training environment,
# monitoring, UPS) but stay out of the torch benchmark (validation_bench_hosts: gpu1, gpu2), to fit this
# machine. The reruns leave out validate_long: its benchmarks measure for as long as they measure, and
# iperf3 measures every ordered pair, n-1 tests per node; what is compared is the per-task
# cost of a run that has nothing to do. The lab is rebuilt from scratch first and removed at the end
# (GPULAB_SCALE_KEEP=1 keeps it). Logs and the inventory layer: .cache/scale/.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/run-log.sh
. scripts/run-log.sh
extra=${1:-12}
runs=${2:-1}
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
logs=.cache/scale
mkdir -p "$logs"
eval "$(scripts/package-cache.sh start)"
eval "$(scripts/lab-wheels.sh)"
export GPULAB_PIP_CACHE GPULAB_APT_CACHE GPULAB_LAB_WHEELS

layer=$logs/extra-nodes.yml
{
  printf -- '---\n# scripts/scale-bench.sh: %d compute nodes beside the lab'"'"'s own.\nall:\n' "$extra"
  printf '  vars:\n    validation_bench_hosts: [gpu1, gpu2]\n  children:\n    compute:\n      hosts:\n'
  # ansible_host: the plan's management address, as in inventory/lab (offset 10 + node index).
  for n in $(seq 3 $((extra + 2))); do
    printf '        gpu%d: {gpulab_node_index: %d, ansible_host: 172.30.10.%d}\n' "$n" $((n + 2)) $((n + 12))
  done
} >"$layer"
small=(-i inventory/lab)
large=(-i inventory/lab -i "$layer")

play() {  # $1 log name, then ansible-playbook arguments; exits on failure
  local name=$1
  shift
  if ! ansible-playbook "$@" >"$logs/$name.log" 2>&1; then
    tail -30 "$logs/$name.log" >&2
    echo "scale-bench: $name failed (log: $logs/$name.log)" >&2
    exit 1
  fi
}

reruns() {  # $1 size name, then inventory options; prints the median seconds of RUNS reruns
  local size=$1 n start changed seconds=()
  shift
  for n in $(seq "$runs"); do
    start=$(date +%s%N)
    play "$size-rerun-$n" site.yml "$@" --skip-tags validate_long
    seconds+=("$((($(date +%s%N) - start) / 1000000))")
    changed=$(changed_hosts "$logs/$size-rerun-$n.log")
    if [ -n "$changed" ]; then
      echo "scale-bench: the $size rerun $n changed something on $(xargs <<<"$changed") (log: $logs/$size-rerun-$n.log)" >&2
      exit 1
    fi
  done
  median_seconds "${seconds[@]}"
}

echo "scale-bench: 4 nodes, then $((extra + 4)); $runs no-change rerun(s) each (--skip-tags validate_long)"
play destroy playbooks/lab-destroy.yml "${large[@]}"
play small-create playbooks/lab.yml "${small[@]}"
play small-converge site.yml "${small[@]}" --skip-tags validate_long
t_small=$(reruns small "${small[@]}")
play large-create playbooks/lab.yml "${large[@]}"
play large-converge site.yml "${large[@]}" --skip-tags validate_long
t_large=$(reruns large "${large[@]}")
[ -n "${GPULAB_SCALE_KEEP:-}" ] || play destroy playbooks/lab-destroy.yml "${large[@]}"

echo "scale-bench: no-change site.yml --skip-tags validate_long, median of $runs, changed=0 on every host"
printf '  %2d nodes  %7s s\n  %2d nodes  %7s s   (%sx)\n' 4 "$t_small" $((extra + 4)) "$t_large" \
  "$(awk -v a="$t_small" -v b="$t_large" 'BEGIN {printf "%.2f", b / a}')"
for size in small large; do
  echo "  per role, the last $size rerun:"
  scripts/run-profile.py "$logs/$size-rerun-$runs.log" | sed 's/^/    /'
done
