#!/usr/bin/python
"""Look at what a block device holds before a role formats it, and refuse one that holds data."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: device_signatures
short_description: Refuse to format a block device that holds a file system, partition table, LUKS header or Ceph data
description:
  - Lists every signature on I(device) with C(wipefs --json) (read-only; works in containers, where
    C(lsblk -f) sees nothing).
  - The device is C(empty), C(expected) (it holds only what the calling role writes itself, given in
    I(expect), so the role can leave it alone), or C(foreign).
  - "Ceph BlueStore: where C(ceph-bluestore-tool) is installed, the label of a C(ceph_bluestore)
    signature is the Ceph cluster's fsid it belongs to (read with C(show-label), whose secret key is
    never returned), and the signature carries the OSD's id and uuid: with I(expect_label) set to a
    cluster's fsid, only that cluster's OSDs are C(expected)."
  - A C(foreign) device fails the task, naming the device, what is on it and I(allow_variable),
    unless I(allow_overwrite) is true.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  device:
    description: The block device.
    type: path
    required: true
  expect:
    description: Signature types the calling role writes (C(crypto_LUKS), C(ext4), C(ceph_bluestore)).
    type: list
    elements: str
    default: []
  expect_label:
    description: The label the calling role gives what it writes (for C(ceph_bluestore), the cluster's
      fsid); a signature of an I(expect) type with another label (or none) is C(foreign).
    type: str
  allow_overwrite:
    description: The operator named this device explicitly; report it as C(foreign) without failing.
    type: bool
    default: false
  allow_variable:
    description: The variable the refusal tells the operator to add the device to.
    type: str
    default: the role's allow list
extends_documentation_fragment:
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Refuse a disk that holds data unless it is in luks_allow_overwrite
  gpulab.cluster.device_signatures:
    device: /dev/nvme1n1
    expect: [crypto_LUKS]
    expect_label: gpulab-scratch0
    allow_overwrite: "{{ '/dev/nvme1n1' in luks_allow_overwrite }}"
    allow_variable: luks_allow_overwrite
"""

RETURN = r"""
state:
  description: empty, expected or foreign.
  returned: always
  type: str
  sample: expected
signatures:
  description: Every signature wipefs found.
  returned: always
  type: list
  elements: dict
  sample: [{type: crypto_LUKS, offset: "0x0", uuid: 834a6fb9-eef7-489c-983b-92e6563bf467, label: null}]
ceph:
  description: For a Ceph OSD device, its cluster's fsid, OSD id and OSD uuid.
  returned: when the device holds a BlueStore label that could be read
  type: dict
  sample: {ceph_fsid: 421e28b5-f09a-4a0c-860f-317d542b231c, osd_id: 0, osd_uuid: e0295c2d-e3d5-4ed0-8a27-9d0eb6de266c}
description:
  description: What is on the device, in words.
  returned: always
  type: str
  sample: ext4 (UUID 932e0b66-fe0b-4a05-b832-f5da4a2a0c91)
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import storage


def _bluestore_label(module, device):
    """The OSD label of a BlueStore device, or None where ceph-bluestore-tool is missing or cannot read it."""
    tool = module.get_bin_path("ceph-bluestore-tool")
    if not tool:
        return None
    rc, out, _err = module.run_command([tool, "show-label", "--dev", device], environ_update={"LC_ALL": "C"})
    if rc != 0:
        return None
    try:
        return storage.parse_bluestore_label(out)
    except storage.StorageParseError:
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            device=dict(type="path", required=True),
            expect=dict(type="list", elements="str", default=[]),
            expect_label=dict(type="str"),
            allow_overwrite=dict(type="bool", default=False),
            allow_variable=dict(type="str", default="the role's allow list"),
        ),
        supports_check_mode=True,
    )
    device = module.params["device"]
    try:
        if not stat.S_ISBLK(os.stat(device).st_mode):
            module.fail_json(msg=f"{device} is not a block device")
    except OSError as exc:
        module.fail_json(msg=f"cannot look at {device}: {exc.strerror}")
    wipefs = module.get_bin_path("wipefs", required=True)
    rc, out, err = module.run_command([wipefs, "--json", device], environ_update={"LC_ALL": "C"})
    if rc != 0:
        module.fail_json(msg=f"could not read the signatures on {device}: wipefs exited {rc}: {err.strip()}")
    try:
        signatures = storage.parse_wipefs_json(out)
    except storage.StorageParseError as exc:
        module.fail_json(msg=f"could not read the signatures on {device}: {exc}", output=out[:2000])
    ceph = _bluestore_label(module, device) if any(s["type"] == "ceph_bluestore" for s in signatures) else None
    for signature in signatures:
        if ceph and signature["type"] == "ceph_bluestore":
            signature.update(label=ceph["ceph_fsid"], **ceph)
    state = storage.classify(signatures, module.params["expect"], module.params["expect_label"])
    result = dict(changed=False, state=state, signatures=signatures, description=storage.describe(signatures))
    if ceph:
        result["ceph"] = ceph
    if state == "foreign" and not module.params["allow_overwrite"]:
        module.fail_json(msg=storage.refusal(device, signatures, module.params["allow_variable"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
