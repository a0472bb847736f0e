#!/usr/bin/env bash
# `make test`: every stage of the suite, independent ones side by side in lanes, then a table of
# where the time went. It is also the benchmark of the suite: rerun it to reproduce the table.
#
#   GPULAB_TEST_LANES  lanes separated by ';', each a list of stages run in order (default below).
#                      Stages: lint, unit, lab, ee (the execution environment), and any Molecule scenario name.
#   GPULAB_TEST_FLOATING  stages the first lane to finish its own runs (default below, none with your lanes)
#   GPULAB_SKIP_KERNEL=1  leaves the QEMU scenario `kernel` out (quick local runs)
#
# Setup (Docker engine, virtualenv, test image, package cache) runs first, alone. Every stage
# runs even when another fails; each one's output goes to .cache/test/<stage>.log and the tail
# of each failed one is shown at the end. Exit status 1 names every failed stage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# Lanes from measurement (docs/speed.md): the suite is CPU-bound, so the lanes are split to end
# together. The container scenarios share one Docker subnet and so one lane, after the QEMU scenario
# (networks of its own; CPU, little disk): the lab (a network of its own) fills the other lane, and
# its tests, which leave most of a core idle while jobs run, go beside the scenarios. Storage and ceph,
# whose daemons wait on the disk, thus run after the lab's converge, not beside it (in CI's run of
# 0aa1b93, beside it, they took 1.6 and 1.8 times as long). The rest floats, in this order: the unit
# tests, Molecule monitoring and common (subnets of their own), lint (no network) and the execution
# environment. The lane that finishes its own stages first claims them in that order, each unless the
# other lane has finished by then and claimed it.
default_lanes="kernel preflight network storage ceph gpu_stack slurm;lab"
default_floating="unit monitoring common lint ee"
lanes=${GPULAB_TEST_LANES:-$default_lanes}
if [ -n "${GPULAB_TEST_LANES:-}" ]; then default_floating=""; fi
floating=${GPULAB_TEST_FLOATING-$default_floating}
if [ -n "${GPULAB_SKIP_KERNEL:-}" ]; then
  lanes=$(sed -E 's/(^|[ ;])kernel( |;|$)/\1\2/' <<<"$lanes")
  floating=$(sed -E 's/(^| )kernel( |$)/\1\2/' <<<"$floating")
fi
logs=.cache/test
rm -rf "$logs"
mkdir -p "$logs"
table=$logs/stages.tsv
started=$SECONDS
trap 'kill 0' INT TERM

command_of() {  # the command line of a stage
  case "$1" in
    setup) echo "scripts/ensure-docker.sh && make --no-print-directory setup image" ;;
    lint) echo "make --no-print-directory lint" ;;
    unit) echo "make --no-print-directory test-unit" ;;
    lab) echo "make --no-print-directory test-lab" ;;
    ee) echo "make --no-print-directory test-ee" ;;
    *) echo "molecule test -s $1" ;;
  esac
}

tests_of() {  # the last pytest summary in a stage's log ("83 passed, 2 skipped"), or -
  local line
  line=$(grep -aoE '[0-9]+ (passed|failed)(, [0-9]+ [a-z]+)*' "$1" | tail -n 1)
  echo "${line:--}"
}

run_floating() {  # $1 lane: each floating stage no other lane has claimed (mkdir claims it at once)
  local stage
  for stage in $floating; do
    if mkdir "$logs/claim.$stage" 2>/dev/null; then run_stage "$1" "$stage"; fi
  done
}

run_stage() {  # $1 lane, $2 stage; appends a row to the table
  local lane=$1 stage=$2 begin=$SECONDS rc result
  bash -c "$(command_of "$stage")" >"$logs/$stage.log" 2>&1
  rc=$?
  result=passed
  [ "$rc" -eq 0 ] || result="FAILED($rc)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$stage" "$lane" "$result" $((SECONDS - begin)) "$(tests_of "$logs/$stage.log")" >>"$table"
  printf 'make test: %-10s %-10s %5d s   (lane %s, log %s)\n' "$stage" "$result" $((SECONDS - begin)) "$lane" "$logs/$stage.log"
  return "$rc"
}

# Setup first and alone: without it no other stage can run.
if ! run_stage - setup; then
  tail -n 40 "$logs/setup.log"
  echo "make test: setup failed; nothing else ran"
  exit 1
fi
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
eval "$(scripts/package-cache.sh start 2>>"$logs/setup.log")"
tail -n 1 "$logs/setup.log"
export GPULAB_PIP_CACHE GPULAB_APT_CACHE GPULAB_APT_CACHE_RESTARTS

lane=0
IFS=';' read -ra lane_list <<<"$lanes"
for stages in "${lane_list[@]}"; do
  lane=$((lane + 1))
  read -ra stage_list <<<"$stages"
  [ ${#stage_list[@]} -gt 0 ] || continue
  (
    for stage in "${stage_list[@]}"; do run_stage "$lane" "$stage"; done
    run_floating "$lane"
  ) &
done
wait

[ -z "$GPULAB_APT_CACHE" ] || scripts/package-cache.sh check "$GPULAB_APT_CACHE_RESTARTS"
failed=$(awk -F'\t' '$3 != "passed" {print $1}' "$table" | xargs)
for stage in $failed; do
  echo
  echo "---- $stage failed; the last 60 lines of $logs/$stage.log:"
  tail -n 60 "$logs/$stage.log"
done

echo
echo "make test: where the time went (seconds; lanes run side by side)"
{
  printf 'stage\tlane\tresult\tseconds\ttests\n'
  cat "$table"
  printf 'wall clock\t\t\t%s\t\n' $((SECONDS - started))
} | awk -F'\t' '{printf "  %-11s %-5s %-11s %8s  %s\n", $1, $2, $3, $4, $5}'
count=$(wc -l <"$table")
nfailed=$(wc -w <<<"$failed")
echo "stages: $((count - nfailed)) passed, $nfailed failed"
if [ -n "$failed" ]; then
  echo "make test: FAILED: $failed"
  exit 1
fi
