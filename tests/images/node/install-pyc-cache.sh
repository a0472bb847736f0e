#!/usr/bin/env bash
# Test nodes keep the bytecode of Ansible's module payloads (gpulab_pyc_cache.py says why and how).
# Used by container-fixups.sh (the test image) and tests/kernel/vm.sh (the VM image). Argument: the root dir.
set -euo pipefail
root=${1:?root directory}
site=$root/usr/lib/python3/dist-packages
install -D -m 0644 "$(dirname "$0")/gpulab_pyc_cache.py" "$site/gpulab_pyc_cache.py"
# site imports each .pth line that starts with "import", in every interpreter that starts.
echo "import gpulab_pyc_cache" >"$site/gpulab-pyc-cache.pth"
