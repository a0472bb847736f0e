#!/usr/bin/python
"""Write a set of files in one step: the roles' many small configuration files without a task per file."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: files
short_description: Write several files in one step, each only when its content or attributes differ
description:
  - Compares each entry of I(files) with the file on the node and writes, atomically (a temporary
    file in the same directory, then a rename), only those whose content differs, then sets the mode,
    owner and group where they differ.
  - One module run for the whole set, where a C(copy) or C(template) loop costs a connection per file.
    Its action renders each I(template) and reads each I(src) on the controller first.
  - The action first asks the node with one shell command (C(stat), C(sha1sum), C(readlink), C(find),
    C(systemctl show); no Python, no contents sent) and compares on the controller. Where every directory, file,
    link, pruned directory and service is as asked, the module does not run. Anything that read cannot judge
    exactly (a symbolic mode, a path through a link, output it does not expect) leaves the task to the module.
  - A file's directory must exist, or be in I(directories). In check mode a file in a missing directory
    is reported as one that would be written (a package that is not installed yet would create it).
  - Contents are module arguments, so a task that writes a secret must be C(no_log), as a C(copy) of
    it would be.
  - With I(links), symbolic links are made or pointed anew after the files; a path that holds a file or a
    directory rather than a link is refused, never replaced.
  - With I(prune), files a role wrote earlier and no longer wants (a link gone from the plan) are removed
    in the same run.
  - With I(services), the units that run on these files are enabled and started in the same run, and
    restarted where a path the run changed matches one of their I(restart_on) patterns; a role's files
    and its services in one step, where a C(systemd_service) task after them costs another connection.
    systemd reads its units again first when a changed path is a unit or drop-in, or a unit asks for it.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  directories:
    description: Directories to create first where missing (with their parents), and whose attributes to set.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the directory.
        type: path
        required: true
      mode:
        description: Permissions, in octal, such as C("0755").
        type: str
        required: true
      owner:
        description: Owner of the directory; the connecting user's when not given.
        type: str
      group:
        description: Group of the directory; the connecting user's when not given.
        type: str
  files:
    description: The files to write.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path of the file.
        type: path
        required: true
      content:
        description: The whole content of the file. Exactly one of I(content), I(template) and I(src).
        type: str
      template:
        description: A template rendered on the controller, found as the C(template) module finds it
          (the role's C(templates/)); it sees the task's variables and I(vars).
        type: str
      vars:
        description: Variables for I(template) only, on top of the task's.
        type: dict
      src:
        description: A file read on the controller, found as the C(copy) module finds it (the role's C(files/)).
        type: str
      validate:
        description: A command run on the new content before it replaces the file, C(%s) standing for a
          temporary file; a non-zero exit leaves the file as it was and fails the task.
        type: str
      mode:
        description: Permissions, in octal, such as C("0644").
        type: str
        required: true
      owner:
        description: Owner of the file; the connecting user's when not given.
        type: str
      group:
        description: Group of the file; the connecting user's when not given.
        type: str
  links:
    description: Symbolic links to make, or to point anew where they point elsewhere, after I(files).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the link; its directory must exist (in check mode, a missing one would be made).
        type: path
        required: true
      target:
        description: What the link points to, as C(ln -s) takes it (relative to the link's directory, or absolute).
        type: str
        required: true
  prune:
    description: Directories to clear of the role's stale files, after writing I(files).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the directory (not searched recursively; a missing one has nothing to remove).
        type: path
        required: true
      patterns:
        description: Shell patterns of file names; a regular file that matches one and is not in I(files) is removed.
        type: list
        elements: str
        required: true
  services:
    description: systemd units to enable and start after the files are written and pruned, in this order.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The unit, as C(systemctl) takes it (C(.service) may be left out).
        type: str
        required: true
      start:
        description: Start the unit where it is not running; C(false) only enables it (a oneshot unit
          that runs at boot, a service whose condition keeps it inactive here). I(restart_on) holds either way.
        type: bool
        default: true
      restart_on:
        description: Shell patterns matched against the paths this run changed (files, directories,
          removed files); a match restarts the unit (runs a oneshot unit again). C(["*"]) restarts it on any change.
        type: list
        elements: str
        default: []
  also_changed:
    description: Paths earlier tasks changed (a file written with C(no_log), say), which I(restart_on)
      matches as it matches this run's, and which ask systemd to read its units again in the same way.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    description: Can run in check mode, reporting what a real run would do without doing it.
    support: full
    details: Reports the files it would write, remove or whose attributes it would set, and the units it
      would enable, start or restart; a unit not installed yet is reported as one it would enable and start.
  diff_mode:
    description: Returns a diff of what it changed, in diff mode.
    support: full
    details: One diff per written or removed file, and per unit enabled, started or restarted.
"""

EXAMPLES = r"""
- name: Write slurm.conf and cgroup.conf
  gpulab.cluster.files:
    files:
      - {path: /etc/slurm/slurm.conf, template: slurm.conf.j2, mode: "0644"}
      - {path: /etc/slurm/cgroup.conf, template: cgroup.conf.j2, mode: "0644"}
      - {path: /usr/local/sbin/gpulab-node-check, src: gpulab-node-check, mode: "0755"}
  register: slurm_config
  notify: Restart slurmd

- name: Write the Ray service and its settings, enable it, start it, restart it when one of them changed
  gpulab.cluster.files:
    files:
      - {path: /etc/systemd/system/ray-head.service, template: ray.service.j2, mode: "0644"}
      - {path: /etc/gpulab/ray.env, template: ray.env.j2, mode: "0644"}
    services:
      - {name: ray-head.service, restart_on: ["*"]}

- name: Write a .network file per link, and remove those of links no longer planned
  gpulab.cluster.files:
    files: "{{ links | map('combine', {'mode': '0644'}) }}"
    prune:
      - {path: /etc/systemd/network, patterns: ["05-gpulab-*.network"]}
"""

RETURN = r"""
changed_paths:
  description: The directories and files created, written or whose attributes were set, the links made or
    pointed anew, then the files removed (or that would be, in check mode), in the order given.
  returned: always
  type: list
  elements: str
  sample: [/etc/slurm/slurm.conf]
changed_services:
  description: The units of I(services) enabled, started or restarted (or that would be, in check mode),
    each with what was done to it.
  returned: always
  type: list
  elements: str
  sample: ["ray-head.service: enabled, started"]
"""

import fnmatch
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import file_status, systemd

ATTRIBUTES = ("owner", "group", "mode")


def read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write(module: AnsibleModule, path: str, data: bytes, validate: str | None) -> None:
    """Replace path with data in one rename, so no reader sees half a file; validate the new content first."""
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=os.path.dirname(path))
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    if validate:
        rc, out, err = module.run_command(validate.replace("%s", tmp), use_unsafe_shell=False)
        if rc != 0:
            os.unlink(tmp)
            module.fail_json(msg=f"{path}: the new content failed '{validate}' (rc {rc}): {(err or out).strip()}")
    module.atomic_move(tmp, path, unsafe_writes=False)


def one_directory(module: AnsibleModule, entry: dict) -> bool:
    """Create one directory (and its parents) where missing, then its attributes; True when it changed."""
    path = entry["path"]
    created = not os.path.isdir(path)
    if created and module.check_mode:
        return True
    if created:
        os.makedirs(path)
    file_args = module.load_file_common_arguments({"path": path, **{k: entry.get(k) for k in ATTRIBUTES}})
    return module.set_fs_attributes_if_different(file_args, created)


def one_file(module: AnsibleModule, entry: dict, diffs: list[dict]) -> bool:
    """Write one entry if it differs; True when it changed (or would)."""
    path, data = entry["path"], entry["content"].encode()
    if not os.path.isdir(os.path.dirname(path)):
        if module.check_mode:
            diffs.append({"before_header": path, "after_header": path, "before": "", "after": entry["content"]})
            return True
        module.fail_json(msg=f"{path}: its directory {os.path.dirname(path)} does not exist")
    before = read(path)
    changed = before != data
    if changed:
        diffs.append(
            {
                "before_header": path,
                "after_header": path,
                "before": "" if before is None else before.decode(errors="replace"),
                "after": entry["content"],
            }
        )
        if not module.check_mode:
            write(module, path, data, entry.get("validate"))
    if before is None and module.check_mode:
        return True
    file_args = module.load_file_common_arguments({"path": path, **{k: entry.get(k) for k in ATTRIBUTES}})
    return module.set_fs_attributes_if_different(file_args, changed) or changed


def one_link(module: AnsibleModule, entry: dict, diffs: list[dict]) -> bool:
    """Make one link, or point it anew, in one rename; True when it changed (or would)."""
    path, target = entry["path"], entry["target"]
    before = os.readlink(path) if os.path.islink(path) else None
    if before is None and os.path.lexists(path):
        module.fail_json(msg=f"{path}: a file or directory is there, not a link to {target}; it was left as it is")
    if before == target:
        return False
    diffs.append(
        {
            "before_header": path,
            "after_header": path,
            "before": f"-> {before}\n" if before else "",
            "after": f"-> {target}\n",
        }
    )
    if module.check_mode:
        return True
    if not os.path.isdir(os.path.dirname(path)):
        module.fail_json(msg=f"{path}: its directory {os.path.dirname(path)} does not exist")
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.link")
    os.symlink(target, tmp)
    os.replace(tmp, path)
    return True


def stale(directory: dict, wanted: set[str]) -> list[str]:
    """The regular files in one prune directory that match its patterns and are not wanted, sorted."""
    try:
        names = sorted(os.listdir(directory["path"]))
    except FileNotFoundError:
        return []
    return [
        path
        for path in (os.path.normpath(os.path.join(directory["path"], name)) for name in names)
        if any(fnmatch.fnmatch(os.path.basename(path), pattern) for pattern in directory["patterns"])
        and path not in wanted
        and os.path.isfile(path)
        and not os.path.islink(path)
    ]


def remove(module: AnsibleModule, path: str, diffs: list[dict]) -> None:
    before = read(path) or b""
    diffs.append(
        {"before_header": path, "after_header": "(removed)", "before": before.decode(errors="replace"), "after": ""}
    )
    if not module.check_mode:
        os.unlink(path)


def systemctl(module: AnsibleModule, *args: str) -> str:
    rc, out, err = module.run_command([module.get_bin_path("systemctl", required=True), *args])
    if rc != 0:
        module.fail_json(msg=f"systemctl {' '.join(args)} failed (rc {rc}): {(err or out).strip()}")
    return out


def show(module: AnsibleModule, services: list[dict]) -> list[dict[str, str]]:
    out = systemctl(module, "show", "-p", ",".join(systemd.PROPERTIES), *[service["name"] for service in services])
    try:
        return systemd.parse_show(out, len(services))
    except systemd.SystemdParseError as error:
        module.fail_json(msg=f"files: {error}")


PAST = {"enable": "enabled", "start": "started", "restart": "restarted"}


def converge_services(module: AnsibleModule, services: list[dict], changed_paths: list[str], diffs: list[dict]):
    """Enable, start or restart each service as it needs; the units changed, with what was done to each."""
    reloaded = systemd.needs_reload(changed_paths) and not module.check_mode
    if reloaded:
        systemctl(module, "daemon-reload")
    units = show(module, services)
    if not reloaded and not module.check_mode and any(unit["NeedDaemonReload"] == "yes" for unit in units):
        systemctl(module, "daemon-reload")
        units = show(module, services)
    # In check mode a unit not found yet is one a package this run would install brings.
    problems = systemd.unit_problems(services, units, missing_ok=module.check_mode)
    if problems:
        module.fail_json(msg=f"files: {'; '.join(problems)}")
    changed = []
    for service, unit, todo in zip(services, units, systemd.plan(services, units, changed_paths), strict=True):
        if not todo:
            continue
        if not module.check_mode:
            for action in todo:
                systemctl(module, action, service["name"])
        done = ", ".join(PAST[action] for action in todo)
        changed.append(f"{service['name']}: {done}")
        diffs.append(
            {
                "before_header": f"{service['name']} (unit)",
                "after_header": f"{service['name']} (unit)",
                "before": f"{unit['UnitFileState'] or 'not installed'}, {unit['ActiveState']}\n",
                "after": f"{done}\n",
            }
        )
    return changed


def main() -> None:
    module = AnsibleModule(
        argument_spec=file_status.ARGUMENT_SPEC,
        supports_check_mode=True,
    )
    p = module.params
    relative = [
        entry["path"]
        for entry in p["directories"] + p["files"] + p["links"] + p["prune"]
        if not os.path.isabs(entry["path"])
    ]
    if relative:
        module.fail_json(msg=f"files: paths must be absolute, got {', '.join(relative)}")
    missing = [entry["path"] for entry in p["files"] if entry["content"] is None]
    if missing:
        module.fail_json(msg=f"files: no content for {', '.join(missing)} (its action renders template and src)")
    diffs: list[dict] = []
    changed_paths = [entry["path"] for entry in p["directories"] if one_directory(module, entry)]
    changed_paths += [entry["path"] for entry in p["files"] if one_file(module, entry, diffs)]
    changed_paths += [entry["path"] for entry in p["links"] if one_link(module, entry, diffs)]
    wanted = {os.path.normpath(entry["path"]) for entry in p["files"]}
    for path in [path for directory in p["prune"] for path in stale(directory, wanted)]:
        remove(module, path, diffs)
        changed_paths.append(path)
    changed_services = (
        converge_services(module, p["services"], changed_paths + p["also_changed"], diffs) if p["services"] else []
    )
    module.exit_json(
        changed=bool(changed_paths or changed_services),
        changed_paths=changed_paths,
        changed_services=changed_services,
        diff=diffs,
    )


if __name__ == "__main__":
    main()
