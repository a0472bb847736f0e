#!/usr/bin/env bash
# Build the execution environment (execution-environment.yml) with the local Docker engine: the
# collection's tarball from this tree, then ansible-builder. Docker's layer cache keeps a rebuild
# after a change to the collection to its last stages.
#
#   scripts/ee.sh      (make ee; the image: gpulab/ee:<version in galaxy.yml>)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
work=.cache/ee
rm -rf "$work"
mkdir -p "$work"
ansible-galaxy collection build --output-path "$work" . >/dev/null
ansible-builder build -f execution-environment.yml --context "$work/context" --container-runtime docker
