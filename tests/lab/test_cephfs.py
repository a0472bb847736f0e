"""The lab's L2 tier: Ceph on storage1 is healthy and CephFS is one file system for both compute nodes."""

import json
import subprocess


def on(node, command):
    return subprocess.run(
        ["docker", "exec", node, "sh", "-c", command], check=True, capture_output=True, text=True, timeout=60
    ).stdout.strip()


def test_ceph_is_healthy_with_both_osds_up():
    status = json.loads(on("storage1", "ceph status --format json"))
    assert status["health"]["status"] == "HEALTH_OK", status["health"]
    assert (status["osdmap"]["num_up_osds"], status["osdmap"]["num_osds"]) == (2, 2)


def test_a_file_written_on_gpu1_reads_back_identical_on_gpu2():
    written = on("gpu1", "head -c 4M /dev/urandom > /mnt/cephfs/lab-check.bin && sha256sum /mnt/cephfs/lab-check.bin")
    try:
        assert on("gpu2", "sha256sum /mnt/cephfs/lab-check.bin") == written
    finally:
        on("gpu1", "rm -f /mnt/cephfs/lab-check.bin")
