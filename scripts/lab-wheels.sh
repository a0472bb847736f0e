#!/usr/bin/env bash
# The wheels the lab's training environment installs from, kept on this machine between runs in
# GPULAB_LAB_WHEELS (default /var/cache/gpulab/lab-wheels):
#   - the build machine's CPU torch wheel (from PIP_FIND_LINKS, hard-linked when it can be);
#   - a deepspeed wheel with its CPU ops (cpu_adam, shm_comm) compiled, built here once per pin
#     (about 2 minutes), so that no node compiles them during the lab's converge (minutes per node).
# The pins are the training role's defaults. Prints GPULAB_LAB_WHEELS=<dir> for the caller to
# export. A build that fails says so and leaves the nodes to compile DeepSpeed's ops themselves.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
dir=${GPULAB_LAB_WHEELS:-/var/cache/gpulab/lab-wheels}
say() { printf 'lab wheels: %s\n' "$*" >&2; }
pin() { sed -n "s/^  $1: .*default('\([^']*\)').*/\1/p" roles/training/defaults/main.yml; }
torch=$(pin pytorch)
deepspeed=$(pin deepspeed)
mkdir -p "$dir"
for wheel in "${PIP_FIND_LINKS:-/opt/wheels}"/torch-"$torch"*.whl; do
  [ -f "$wheel" ] && { [ -f "$dir/${wheel##*/}" ] || ln -f "$wheel" "$dir/" 2>/dev/null || cp "$wheel" "$dir/"; }
done
if ls "$dir"/deepspeed-"$deepspeed"-*.whl >/dev/null 2>&1; then
  say "deepspeed $deepspeed with prebuilt ops: cached in $dir"
else
  say "building deepspeed $deepspeed with its CPU ops (once per pin, about 2 minutes)"
  build=$(mktemp -d)
  start=$(date +%s)
  if python3.11 -m venv "$build/venv" &&
    "$build/venv/bin/pip" install -q "torch==$torch" "setuptools<81" wheel >"$build/log" 2>&1 &&
    DS_BUILD_CPU_ADAM=1 DS_BUILD_SHM_COMM=1 DS_BUILD_UTILS=1 "$build/venv/bin/pip" wheel -q --no-deps \
      --no-build-isolation --no-cache-dir "deepspeed==$deepspeed" -w "$build/out" >>"$build/log" 2>&1; then
    mv "$build"/out/deepspeed-*.whl "$dir/"
    say "built in $(($(date +%s) - start)) s: $(ls "$dir"/deepspeed-"$deepspeed"-*.whl)"
  else
    tail -5 "$build/log" >&2
    say "the build failed: the nodes will compile DeepSpeed's ops themselves (slower)"
  fi
  rm -rf "$build"
fi
printf 'GPULAB_LAB_WHEELS=%s\n' "$dir"
