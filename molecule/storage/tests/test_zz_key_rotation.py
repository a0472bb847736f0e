"""Key rotation as an operator does it: the new key in luks_keys, the old one in luks_previous_keys.

Runs last (it changes the disk's key).
"""

import json
import re

import testinfra

OLD, NEW = "first-key-of-data0", "second-key-of-data0"


def test_rotation_leaves_exactly_the_new_key(ansible_playbook, request):
    node = testinfra.get_host("ansible://st-node", ansible_inventory=request.config.option.ansible_inventory)
    uuid = node.check_output("blkid -s UUID -o value /dev/xvdb")
    # A key file as a node bound to Tang by an older gpulab kept: the role removes it.
    node.check_output(f"install -d -m 0700 /etc/gpulab/luks && printf %s {OLD} > /etc/gpulab/luks/data0.key")
    rotate = json.dumps({"luks_keys": {"data0": NEW}, "luks_previous_keys": {"data0": [OLD]}})
    run = ansible_playbook("playbooks/storage.yml", "--tags", "luks", "-v", "-e", rotate)
    assert run.returncode == 0, run.stdout[-3000:]
    assert OLD not in run.stdout and NEW not in run.stdout  # secrets never show, even with -v

    def opens(key):
        return node.run(f"printf %s {key} | cryptsetup open --test-passphrase --key-file - /dev/xvdb").rc == 0

    assert opens(NEW) and not opens(OLD)
    dump = node.check_output("cryptsetup luksDump /dev/xvdb")
    assert len(re.findall(r"^\s+\d+: luks2$", dump, re.M)) == 2  # the new key and Clevis's
    assert not node.file("/etc/gpulab/luks/data0.key").exists
    # The same header: rotation never re-formats.
    assert node.check_output("blkid -s UUID -o value /dev/xvdb") == uuid

    again = ansible_playbook("playbooks/storage.yml", "--tags", "luks", "-e", rotate)
    assert again.returncode == 0
    assert re.search(r"st-node\s+: ok=\d+\s+changed=0 ", again.stdout), again.stdout[-2000:]
