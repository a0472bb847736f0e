"""gpulab.cluster.files on real files in a temporary directory: written once, unchanged after, check mode
and diff, attributes, and the refusals."""

import os
import stat

from ansible_collections.gpulab.cluster.plugins.modules import files


def entry(path, content, mode="0644"):
    return {"path": str(path), "content": content, "mode": mode}


def test_write_then_nothing_to_do_then_only_what_differs(run_module, tmp_path):
    a, b = tmp_path / "a.conf", tmp_path / "b.conf"
    wanted = [entry(a, "one\n"), entry(b, "two\n", "0600")]
    result, failed = run_module(files.main, {"files": wanted})
    assert not failed and result["changed"] and result["changed_paths"] == [str(a), str(b)]
    assert a.read_text() == "one\n" and b.read_text() == "two\n"
    assert stat.S_IMODE(b.stat().st_mode) == 0o600 and stat.S_IMODE(a.stat().st_mode) == 0o644
    result, failed = run_module(files.main, {"files": wanted})
    assert not failed and not result["changed"] and result["changed_paths"] == [] and result["diff"] == []
    inode = b.stat().st_ino
    result, failed = run_module(files.main, {"files": [entry(a, "one, edited\n"), entry(b, "two\n", "0600")]})
    assert not failed
    assert result["changed_paths"] == [str(a)] and b.stat().st_ino == inode  # b left alone
    assert result["diff"] == [
        {"before_header": str(a), "after_header": str(a), "before": "one\n", "after": "one, edited\n"}
    ]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_a_mode_alone_is_a_change(run_module, tmp_path):
    a = tmp_path / "a.conf"
    a.write_text("one\n")
    a.chmod(0o600)
    result, failed = run_module(files.main, {"files": [entry(a, "one\n", "0644")]})
    assert not failed
    assert result["changed_paths"] == [str(a)] and result["diff"] == []
    assert stat.S_IMODE(a.stat().st_mode) == 0o644


def test_check_mode_reports_and_writes_nothing(run_module, tmp_path):
    a, b = tmp_path / "a.conf", tmp_path / "b.conf"
    a.write_text("old\n")
    missing_dir = tmp_path / "not-yet" / "c.conf"  # a package would create the directory
    wanted = [entry(a, "new\n"), entry(b, "b\n"), entry(missing_dir, "c\n"), entry(tmp_path / "d", "")]
    (tmp_path / "d").write_text("")
    (tmp_path / "d").chmod(0o644)
    result, failed = run_module(files.main, {"files": wanted}, check_mode=True)
    assert not failed and result["changed_paths"] == [str(a), str(b), str(missing_dir)]
    assert a.read_text() == "old\n" and not b.exists() and not missing_dir.parent.exists()
    assert [d["before"] for d in result["diff"]] == ["old\n", "", ""]


def test_refusals_name_the_path(run_module, tmp_path):
    result, failed = run_module(files.main, {"files": [entry(tmp_path / "none" / "a", "x")]})
    assert failed and result["msg"] == f"{tmp_path}/none/a: its directory {tmp_path}/none does not exist"
    result, failed = run_module(files.main, {"files": [entry("etc/a.conf", "x")]})
    assert failed and result["msg"] == "files: paths must be absolute, got etc/a.conf"
    assert not os.path.exists("etc/a.conf")


def test_directories_come_first_with_their_attributes(run_module, tmp_path):
    jobs = tmp_path / "opt" / "jobs"
    args = {
        "directories": [{"path": str(jobs), "mode": "0750"}],
        "files": [entry(jobs / "ddp.sbatch", "#!/bin/bash\n")],
    }
    result, failed = run_module(files.main, args, check_mode=True)
    assert not failed and result["changed_paths"] == [str(jobs), str(jobs / "ddp.sbatch")] and not jobs.exists()
    result, failed = run_module(files.main, args)
    assert not failed and result["changed_paths"] == [str(jobs), str(jobs / "ddp.sbatch")]
    assert stat.S_IMODE(jobs.stat().st_mode) == 0o750 and (jobs / "ddp.sbatch").read_text() == "#!/bin/bash\n"
    result, failed = run_module(files.main, args)
    assert not failed
    assert result["changed_paths"] == []
    jobs.chmod(0o755)
    result, failed = run_module(files.main, args)
    assert not failed
    assert result["changed_paths"] == [str(jobs)] and stat.S_IMODE(jobs.stat().st_mode) == 0o750


def test_an_entry_the_action_gave_no_content_is_refused(run_module, tmp_path):
    result, failed = run_module(files.main, {"files": [{"path": str(tmp_path / "a"), "mode": "0644"}]})
    assert failed and result["msg"] == f"files: no content for {tmp_path}/a (its action renders template and src)"


def test_validate_runs_on_the_new_content_and_a_failure_keeps_the_old_file(run_module, tmp_path):
    a = tmp_path / "a.conf"
    a.write_text("good\n")
    check = "grep -q good %s"
    result, failed = run_module(files.main, {"files": [dict(entry(a, "bad\n"), validate=check)]})
    assert failed and result["msg"].startswith(f"{a}: the new content failed 'grep -q good %s' (rc 1)")
    assert a.read_text() == "good\n" and [p.name for p in tmp_path.iterdir()] == ["a.conf"]
    result, failed = run_module(files.main, {"files": [dict(entry(a, "good, again\n"), validate=check)]})
    assert not failed and a.read_text() == "good, again\n"


def test_prune_removes_only_stale_files_that_match(run_module, tmp_path):
    keep, stale, other = (
        tmp_path / "05-gpulab-eth1.network",
        tmp_path / "05-gpulab-old.network",
        tmp_path / "10-x.network",
    )
    for path in (keep, stale, other):
        path.write_text(f"{path.name}\n")
    (tmp_path / "05-gpulab-dir.network").mkdir()  # only regular files are removed
    args = {
        "files": [entry(keep, f"{keep.name}\n")],
        "prune": [
            {"path": str(tmp_path) + "/", "patterns": ["05-gpulab-*.network"]},
            {"path": str(tmp_path / "no"), "patterns": ["*"]},
        ],
    }
    result, failed = run_module(files.main, args, check_mode=True)
    assert not failed and result["changed_paths"] == [str(stale)] and stale.exists()
    assert result["diff"] == [
        {"before_header": str(stale), "after_header": "(removed)", "before": "05-gpulab-old.network\n", "after": ""}
    ]
    result, failed = run_module(files.main, args)
    assert not failed and result["changed_paths"] == [str(stale)]
    assert not stale.exists() and keep.exists() and other.exists() and (tmp_path / "05-gpulab-dir.network").is_dir()
    result, failed = run_module(files.main, args)
    assert not failed and not result["changed"] and result["diff"] == []


def test_no_files_with_prune_removes_the_one_file_a_role_no_longer_wants(run_module, tmp_path):
    # nvidia_driver's version pin: written while nvidia_driver_version is set, removed once it is not.
    pin, other = tmp_path / "gpulab-nvidia-driver", tmp_path / "gpulab-cuda"
    args = {
        "files": [entry(pin, "Pin: version 535.216.01*\n")],
        "prune": [{"path": str(tmp_path), "patterns": [pin.name]}],
    }
    result, failed = run_module(files.main, args)
    assert not failed and result["changed_paths"] == [str(pin)] and pin.exists()
    other.write_text("kept\n")
    args["files"] = []
    result, failed = run_module(files.main, args)
    assert not failed and result["changed_paths"] == [str(pin)] and not pin.exists() and other.exists()
    result, failed = run_module(files.main, args)
    assert not failed and not result["changed"]


def test_directories_alone_with_setgid_and_sticky_bits(run_module, tmp_path):
    # The training role's shared directories: datasets group-writable and setgid, checkpoints like /tmp.
    datasets, checkpoints = tmp_path / "datasets", tmp_path / "checkpoints"
    args = {
        "directories": [{"path": str(datasets), "mode": "2775"}, {"path": str(checkpoints), "mode": "1777"}],
        "files": [],
    }
    result, failed = run_module(files.main, args)
    assert not failed and result["changed_paths"] == [str(datasets), str(checkpoints)]
    assert stat.S_IMODE(datasets.stat().st_mode) == 0o2775 and stat.S_IMODE(checkpoints.stat().st_mode) == 0o1777
    result, failed = run_module(files.main, args)
    assert not failed and not result["changed"]


class FakeSystemd:
    """systemctl as the module calls it, on units held in a dict: show, enable, start, restart, daemon-reload."""

    def __init__(self, **units):
        self.units = {name: dict(state) for name, state in units.items()}
        self.calls = []

    def __call__(self, module, argv, **kwargs):
        args = argv[1:]
        self.calls.append(" ".join(args))
        if args[0] == "show":
            blocks = []
            for name in args[3:]:
                state = self.units.get(name, {"load": "not-found", "file": "", "active": "inactive"})
                blocks.append(
                    f"Id={name}.service\nLoadState={state['load']}\nActiveState={state['active']}\n"
                    f"UnitFileState={state['file']}\nNeedDaemonReload={state.get('reload', 'no')}\n"
                )
            return 0, "\n".join(blocks), ""
        if args[0] == "daemon-reload":
            for state in self.units.values():
                state["reload"] = "no"
            return 0, "", ""
        state = self.units[args[1]]
        if args[0] == "enable":
            state["file"] = "enabled"
        elif state.get("broken"):
            return 1, "", f"Job for {args[1]}.service failed because the control process exited with error code."
        else:
            state["active"] = "active"
        return 0, "", ""


def stopped():
    return {"load": "loaded", "file": "disabled", "active": "inactive"}


def test_services_are_enabled_and_started_then_left_alone(run_module, tmp_path):
    env = tmp_path / "ray.env"
    args = {"files": [entry(env, "A=1\n")], "services": [{"name": "ray-head", "restart_on": ["*"]}, {"name": "munge"}]}
    systemctl = FakeSystemd(**{"ray-head": stopped(), "munge": dict(stopped(), file="static")})
    result, failed = run_module(files.main, args, run_command=systemctl)
    assert not failed and result["changed_services"] == ["ray-head: enabled, restarted", "munge: started"]
    assert systemctl.calls == [
        "show -p Id,LoadState,ActiveState,UnitFileState,NeedDaemonReload ray-head munge",
        "enable ray-head",
        "restart ray-head",
        "start munge",
    ]
    assert result["diff"][-2:] == [
        {"before_header": "ray-head (unit)", "after_header": "ray-head (unit)",
         "before": "disabled, inactive\n", "after": "enabled, restarted\n"},
        {"before_header": "munge (unit)", "after_header": "munge (unit)",
         "before": "static, inactive\n", "after": "started\n"},
    ]  # fmt: skip
    systemctl.calls.clear()
    result, failed = run_module(files.main, args, run_command=systemctl)
    assert not failed and not result["changed"] and result["changed_services"] == [] and result["diff"] == []
    assert systemctl.calls == ["show -p Id,LoadState,ActiveState,UnitFileState,NeedDaemonReload ray-head munge"]
    env.write_text("A=2\n")
    result, failed = run_module(files.main, args, run_command=systemctl)
    assert (
        not failed and result["changed_paths"] == [str(env)] and result["changed_services"] == ["ray-head: restarted"]
    )


def test_a_unit_file_written_is_read_again_before_its_service_starts(run_module, tmp_path):
    unit = tmp_path / "gpulab-stage-clean.timer"
    args = {"files": [entry(unit, "[Timer]\n")], "services": [{"name": "gpulab-stage-clean.timer"}]}
    systemctl = FakeSystemd(**{"gpulab-stage-clean.timer": stopped()})
    with_unit_dir = dict(args, files=[entry(unit, "[Timer]\n")])
    result, failed = run_module(files.main, with_unit_dir, run_command=systemctl)
    assert not failed and "daemon-reload" not in systemctl.calls  # not a unit directory: tmp_path
    systemctl.units["gpulab-stage-clean.timer"]["reload"] = "yes"  # changed on disk by someone else
    systemctl.calls.clear()
    result, failed = run_module(files.main, args, run_command=systemctl)
    assert not failed and not result["changed"]
    assert systemctl.calls[1] == "daemon-reload" and systemctl.calls[0] == systemctl.calls[2]


def test_check_mode_reports_units_and_touches_none(run_module, tmp_path):
    args = {
        "files": [entry(tmp_path / "a.conf", "x\n")],
        "services": [{"name": "node-exporter"}, {"name": "governor", "start": False}, {"name": "chrony"}],
    }
    systemctl = FakeSystemd(governor=stopped(), chrony={"load": "loaded", "file": "enabled", "active": "active"})
    result, failed = run_module(files.main, args, run_command=systemctl, check_mode=True)
    assert not failed and result["changed_services"] == ["node-exporter: enabled, started", "governor: enabled"]
    assert [call.split()[0] for call in systemctl.calls] == ["show"] and systemctl.units["governor"] == stopped()
    assert result["diff"][1]["before"] == "not installed, inactive\n"


def test_a_missing_unit_a_masked_one_and_a_failed_start_are_named(run_module, tmp_path):
    masked = {"load": "masked", "file": "masked", "active": "inactive"}
    systemctl = FakeSystemd(nut=masked, slapd=dict(stopped(), broken=True))
    result, failed = run_module(files.main, {"files": [], "services": [{"name": "nosuch"}, {"name": "nut"}]}, systemctl)
    assert failed and result["msg"] == "files: nosuch: no such unit; nut: the unit is masked"
    result, failed = run_module(files.main, {"files": [], "services": [{"name": "slapd"}]}, systemctl)
    assert failed and result["msg"] == (
        "systemctl start slapd failed (rc 1): Job for slapd.service failed because the control process exited "
        "with error code."
    )


def test_a_path_an_earlier_task_changed_restarts_what_reads_it(run_module, tmp_path):
    # NUT: upsd.users holds the password, written by a no_log task before the task that runs the services.
    conf = tmp_path / "upsd.conf"
    services = [{"name": "nut-server", "restart_on": ["/etc/nut/upsd.users", str(conf)]}, {"name": "nut-driver@ups"}]
    running = {"load": "loaded", "file": "enabled", "active": "active"}
    systemctl = FakeSystemd(**{"nut-server": running, "nut-driver@ups": dict(running)})
    args = {"files": [entry(conf, "LISTEN 0.0.0.0\n")], "services": services}
    conf.write_text("LISTEN 0.0.0.0\n")
    conf.chmod(0o644)
    result, failed = run_module(files.main, dict(args, also_changed=["/etc/nut/upsd.users"]), run_command=systemctl)
    assert not failed and result["changed_paths"] == [] and result["changed_services"] == ["nut-server: restarted"]
    result, failed = run_module(files.main, args, run_command=systemctl)
    assert not failed and not result["changed"]


def test_links_made_pointed_anew_then_left_alone_and_a_file_in_the_way_refused(run_module, tmp_path):
    (tmp_path / "lib").mkdir()
    home, so = tmp_path / "nccl", tmp_path / "lib" / "libnccl.so"
    links = [{"path": str(home), "target": str(tmp_path / "lib")}, {"path": str(so), "target": "libnccl.so.2"}]
    result, failed = run_module(files.main, {"files": [], "links": links}, check_mode=True)
    assert not failed and result["changed_paths"] == [str(home), str(so)] and not os.path.lexists(home)
    result, failed = run_module(files.main, {"files": [], "links": links})
    assert not failed and result["changed_paths"] == [str(home), str(so)]
    assert os.readlink(home) == str(tmp_path / "lib") and os.readlink(so) == "libnccl.so.2"
    assert result["diff"][1] == {
        "before_header": str(so),
        "after_header": str(so),
        "before": "",
        "after": "-> libnccl.so.2\n",
    }
    result, failed = run_module(files.main, {"files": [], "links": links})
    assert not failed and not result["changed"]
    links[1]["target"] = "libnccl.so.2.21.5"
    result, failed = run_module(files.main, {"files": [], "links": links, "_ansible_diff": True})
    assert not failed and result["changed_paths"] == [str(so)] and os.readlink(so) == "libnccl.so.2.21.5"
    assert (result["diff"][0]["before"], result["diff"][0]["after"]) == ("-> libnccl.so.2\n", "-> libnccl.so.2.21.5\n")
    assert [p.name for p in (tmp_path / "lib").iterdir()] == ["libnccl.so"]  # no temporary link left
    (tmp_path / "plain").write_text("data\n")
    result, failed = run_module(files.main, {"files": [], "links": [{"path": str(tmp_path / "plain"), "target": "x"}]})
    assert (
        failed
        and result["msg"] == f"{tmp_path}/plain: a file or directory is there, not a link to x; it was left as it is"
    )
    assert (tmp_path / "plain").read_text() == "data\n"
