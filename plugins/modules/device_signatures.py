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
  - A C(foreign) device fails the task, naming the device, what is on it and I(allow_variable),
    unless I(allow_overwrite) is true.
version_added: 0.1.0
author: gpulab developers
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
    description: The label the calling role gives what it writes; a signature of an I(expect) type
      with another label (or none) is C(foreign).
    type: str
  allow_overwrite:
    description: The operator named this device explicitly; report it as C(foreign) without failing.
    type: bool
    default: false
  allow_variable:
    description: The variable the refusal tells the operator to add the device to.
    type: str
    default: the role's allow list
attributes:
  check_mode:
    support: full
    details: Reads only.
  diff_mode:
    support: none
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
    state = storage.classify(signatures, module.params["expect"], module.params["expect_label"])
    result = dict(changed=False, state=state, signatures=signatures, description=storage.describe(signatures))
    if state == "foreign" and not module.params["allow_overwrite"]:
        module.fail_json(msg=storage.refusal(device, signatures, module.params["allow_variable"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
