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
version=$(python -c 'import yaml; print(yaml.safe_load(open("galaxy.yml"))["version"])')
rm -rf "$work"
mkdir -p "$work"
ansible-galaxy collection build --output-path "$work" . >/dev/null
# Under a name without the version, so that execution-environment.yml need not spell it.
mv "$work/gpulab-cluster-$version.tar.gz" "$work/gpulab-cluster.tar.gz"
ansible-builder build -f execution-environment.yml --context "$work/context" --container-runtime docker \
  --tag "gpulab/ee:$version"
