#!/usr/bin/env bash
# The no-change rerun of site.yml on the built lab, measured: each variant RUNS times in turn, the
# median of each printed with its per-role table, and every run checked for changed=0.
#
#   scripts/rerun-bench.sh [RUNS]     (default 3; the lab must be up: make lab)
#
# Variants: the default (linear strategy; the lab is reached over SSH) with and without
# `--skip-tags validate_long`, and the same two under mitogen's strategy (an opt-in: installed into
# the virtualenv from pyproject's `mitogen` extra when missing). Logs: .cache/bench/<variant>-<n>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/run-log.sh
. scripts/run-log.sh
runs=${1:-3}
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
logs=.cache/bench
mkdir -p "$logs"

if ! python -c 'import ansible_mitogen' 2>/dev/null; then
  pip install -q "$(python -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["mitogen"][0])')"
fi
mitogen_strategies="$(python -c 'import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))')/plugins/strategy"

run_variant() {  # $1 name, $2 "mitogen" or "", then ansible-playbook options; prints the median seconds
  local name=$1 strategy=$2 n start changed seconds=()  # seconds: each run's milliseconds
  shift 2
  for n in $(seq "$runs"); do
    start=$(date +%s%N)
    if [ "$strategy" = mitogen ]; then
      ANSIBLE_STRATEGY_PLUGINS=$mitogen_strategies ANSIBLE_STRATEGY=mitogen_linear \
        ansible-playbook site.yml "$@" >"$logs/$name-$n.log" 2>&1
    else
      ansible-playbook site.yml "$@" >"$logs/$name-$n.log" 2>&1
    fi || { tail -30 "$logs/$name-$n.log" >&2; echo "rerun-bench: $name run $n failed" >&2; exit 1; }
    seconds+=("$((($(date +%s%N) - start) / 1000000))")  # milliseconds
    changed=$(changed_hosts "$logs/$name-$n.log")
    if [ -n "$changed" ]; then
      echo "rerun-bench: $name run $n changed something on $(xargs <<<"$changed") (log: $logs/$name-$n.log)" >&2
      exit 1
    fi
  done
  median_seconds "${seconds[@]}"
}

echo "rerun-bench: $runs no-change runs of site.yml per variant on: $(ansible all --list-hosts | tail -n +2 | xargs)"
for variant in "default::" "default-short::--skip-tags validate_long" \
  "mitogen:mitogen:" "mitogen-short:mitogen:--skip-tags validate_long"; do
  IFS=: read -r name strategy options <<<"$variant"
  # shellcheck disable=SC2086  # options are words
  median=$(run_variant "$name" "$strategy" $options)
  printf '  %-14s median %6s s   (%s)\n' "$name" "$median" "${options:-with validation}"
done
echo "rerun-bench: per role, the last run of each variant:"
for name in default default-short mitogen mitogen-short; do
  echo "  $name"
  scripts/run-profile.py "$logs/$name-$runs.log" | sed 's/^/    /'
done
