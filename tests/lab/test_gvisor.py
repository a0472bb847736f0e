"""gVisor in the lab (inventory/lab/group_vars/compute.yml: container_runtime_gvisor): runsc registered with
each compute node's Docker as the runtime `runsc`; a container run with it meets gVisor's kernel, not the
node's. The image is made here from four of the node's own programs (the lab reaches no registry)."""

import json

import pytest
from helpers import on

IMAGE = "gpulab/tiny:1"
# A root file system of dash, cat, dmesg and uname with their libraries, imported as IMAGE.
BUILD = f"""set -e
root=$(mktemp -d)
for program in /usr/bin/dash /usr/bin/cat /usr/bin/dmesg /usr/bin/uname; do
  install -D "$program" "$root$program"
  for lib in $(ldd "$program" | grep -o '/[^ ]*'); do install -D "$lib" "$root$lib"; done
done
ln -s usr/bin "$root/bin"
tar -C "$root" -c . | docker import - {IMAGE} >/dev/null
rm -rf "$root"
"""


@pytest.fixture(scope="module")
def image():
    on("gpu1", BUILD)
    yield IMAGE
    on("gpu1", f"docker rmi {IMAGE} >/dev/null")


@pytest.mark.parametrize("node", ["gpu1", "gpu2"])
def test_docker_on_each_compute_node_has_the_runsc_runtime(node):
    runtimes = json.loads(on(node, "docker info --format '{{json .Runtimes}}'"))
    assert runtimes["runsc"]["path"] == "/usr/bin/runsc"
    assert "runc" in runtimes  # the default stays


def test_a_container_under_runsc_boots_gvisors_kernel_and_one_under_runc_shares_the_nodes(image):
    node_kernel = on("gpu1", "uname -r")
    boot = on("gpu1", f"docker run --rm --runtime=runsc --network=none {image} /usr/bin/dmesg", timeout=120)
    assert "Starting gVisor..." in boot and "Ready!" in boot, boot
    sandboxed = on("gpu1", f"docker run --rm --runtime=runsc --network=none {image} /usr/bin/uname -r", timeout=120)
    assert sandboxed != node_kernel  # gVisor's own kernel answers
    assert on("gpu1", f"docker run --rm --network=none {image} /usr/bin/uname -r", timeout=120) == node_kernel
