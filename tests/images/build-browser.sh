#!/usr/bin/env bash
# Build the headless browser image (gpulab/browser:1) from the test image, once.
set -euo pipefail
cd "$(dirname "$0")"
image=${GPULAB_BROWSER_IMAGE:-gpulab/browser:1}
base=${GPULAB_TEST_IMAGE:-gpulab/debian12-systemd:2}
if docker image inspect "$image" >/dev/null 2>&1; then
  exit 0
fi
echo "build-browser: building $image from $base (chromium from the distribution)" >&2
docker build -q --build-arg "BASE=$base" -t "$image" -f Dockerfile.browser . >/dev/null
