"""The read-first actions: which modules run, with which options, and what the task returns."""

from unittest import mock

import pytest

from ansible_collections.gpulab.cluster.plugins.action import packages, python_packages


def make_action(cls, args, replies, check_mode=False, shell=None):
    """The action with a task of these options; _execute_module answers from `replies` (one list per module)
    and records each call as (module, options). A shell command (the packages action's first read) prints
    `shell` and is recorded as ("sh", command); without `shell` it fails, as where the node has no dpkg."""
    task = mock.MagicMock(args=args, async_val=0, check_mode=check_mode)
    connection = mock.MagicMock()
    connection._shell.tmpdir = "/tmp/remote"
    play_context = mock.MagicMock(check_mode=check_mode)
    action = cls(task, connection, play_context, loader=None, templar=None, shared_loader_obj=None)
    calls = []

    def execute(module_name, module_args, task_vars):
        calls.append((module_name, dict(module_args)))
        return dict(replies[module_name].pop(0))

    def low_level(command, **_kwargs):
        calls.append(("sh", command))
        return {"rc": 0, "stdout": shell, "stderr": ""} if shell is not None else {"rc": 127, "stdout": ""}

    action._execute_module = execute
    action._low_level_execute_command = low_level
    return action, calls


READ = "gpulab.cluster.packages"
APT = "ansible.builtin.apt"


def test_packages_settled_by_dpkg_runs_no_apt():
    status = {"changed": False, "needs_apt": False, "installed": {"jq": "1.6"}, "held": [], "why": "installed"}
    action, calls = make_action(packages.ActionModule, {"name": ["jq"]}, {READ: [status]})
    result = action.run(task_vars={"inventory_hostname": "gpu1"})
    assert [call[0] for call in calls] == ["sh", READ]
    assert result["installed"] == {"jq": "1.6"} and result["needs_apt"] is False and not result["changed"]


# What the shell read prints on a node: dpkg-query's lines, then its rc, the clock and the lists' time.
DPKG = "jq\t1.6-2.1\tii \nnvidia-smi\t535.247.01-1\thi \n"


def shell_read(rc=0, lists_age=60):
    return f"{DPKG}gpulab-read {rc} 1765000000 {1765000000 - lists_age}\n"


def test_packages_settled_by_the_shell_read_start_no_module():
    action, calls = make_action(
        packages.ActionModule,
        {"name": "jq,nvidia-smi=535.*", "update_cache": "yes"},
        {},
        shell=shell_read(),
    )
    result = action.run(task_vars={"inventory_hostname": "gpu1"})
    assert [call[0] for call in calls] == ["sh"]
    assert calls[0][1].startswith("dpkg-query -W ") and calls[0][1].endswith(')"')
    assert " -- jq nvidia-smi 2>" in calls[0][1]
    assert (result["changed"], result["needs_apt"], result["simulated"]) == (False, False, False)
    assert result["installed"] == {"jq": "1.6-2.1", "nvidia-smi": "535.247.01-1"}
    assert result["held"] == ["nvidia-smi"] and result["lists_age"] == 60.0


def test_packages_the_shell_read_settles_stale_lists_in_check_mode_only():
    args = {"name": ["jq"], "update_cache": True}
    action, calls = make_action(packages.ActionModule, args, {}, check_mode=True, shell=shell_read(lists_age=7200))
    assert action.run(task_vars={})["needs_apt"] is False and [call[0] for call in calls] == ["sh"]
    # Outside check mode apt must update them: the module reads again and apt runs, as without the shell read.
    action, calls = make_action(
        packages.ActionModule,
        args,
        {READ: [{"needs_apt": True}], APT: [{"changed": False}]},
        shell=shell_read(lists_age=7200),
    )
    action.run(task_vars={})
    assert [call[0] for call in calls] == ["sh", READ, APT]


@pytest.mark.parametrize(
    "args, shell",
    [
        ({"name": ["jq", "tang"]}, shell_read()),  # tang missing
        ({"name": ["jq=1.7*"]}, shell_read()),  # jq off its pin
        ({"name": ["jq"]}, "jq\t1.6-2.1\tii \n"),  # the read stopped before its last line
        ({"name": ["jq"]}, shell_read(rc=2)),  # dpkg-query failed
    ],
)
def test_packages_what_the_shell_read_does_not_settle_goes_to_the_module(args, shell):
    action, calls = make_action(
        packages.ActionModule, args, {READ: [{"needs_apt": True}], APT: [{"changed": False}]}, shell=shell
    )
    action.run(task_vars={})
    assert [call[0] for call in calls] == ["sh", READ, APT]


@pytest.mark.parametrize(
    "args", [{"name": ["jq"], "state": "installed"}, {"name": ["jq"], "colour": "red"}, {"name": ["./x.deb"]}]
)
def test_packages_bad_options_and_names_only_apt_judges_start_no_shell_read(args):
    reply = {"failed": True, "msg": "value of state must be one of"}
    action, calls = make_action(packages.ActionModule, args, {READ: [reply]}, shell=shell_read())
    result = action.run(task_vars={})
    assert [call[0] for call in calls] == [READ] and result["failed"]


def test_packages_apt_runs_then_dpkg_is_read_again_without_updating_lists():
    first = {"needs_apt": True, "installed": {}, "held": [], "missing": ["jq"]}
    again = {"needs_apt": False, "installed": {"jq": "1.6"}, "held": ["jq"], "missing": []}
    action, calls = make_action(
        packages.ActionModule,
        {"name": ["jq"], "update_cache": True},
        {READ: [first, again], APT: [{"changed": True, "cache_updated": True}]},
    )
    result = action.run(task_vars={})
    assert [call[0] for call in calls] == ["sh", READ, APT, READ]
    # apt gets the module's list age, not its own default of 0 (which updates the lists every time).
    assert calls[2][1]["cache_valid_time"] == calls[1][1]["cache_valid_time"] > 0
    assert calls[3][1]["update_cache"] is False
    assert result["changed"] and result["cache_updated"]
    assert result["installed"] == {"jq": "1.6"} and result["held"] == ["jq"] and result["needs_apt"] is True


def test_packages_without_update_cache_gives_apt_no_list_age():
    action, calls = make_action(
        packages.ActionModule,
        {"name": ["jq"]},
        {READ: [{"needs_apt": True}], APT: [{"changed": False}]},
    )
    result = action.run(task_vars={})
    assert "cache_valid_time" not in calls[2][1]
    # apt changed nothing: no second read, and the first read's (absent) values fall back to empty ones.
    assert [call[0] for call in calls] == ["sh", READ, APT]
    assert result["installed"] == {} and result["held"] == []


def test_packages_simulated_in_check_mode_runs_no_apt():
    status = {"changed": True, "needs_apt": True, "simulated": True, "installed": {}, "held": []}
    action, calls = make_action(packages.ActionModule, {"name": ["jq"]}, {READ: [status]}, check_mode=True)
    result = action.run(task_vars={})
    assert [call[0] for call in calls] == ["sh", READ] and result["simulated"]


def test_packages_apt_in_check_mode_is_not_followed_by_a_read():
    action, calls = make_action(
        packages.ActionModule,
        {"name": ["/tmp/x.deb"]},
        {READ: [{"needs_apt": True, "installed": {}}], APT: [{"changed": True}]},
        check_mode=True,
    )
    action.run(task_vars={})
    assert [call[0] for call in calls] == [READ, APT]


@pytest.mark.parametrize("worker_reply", [{"failed": True, "msg": "E: broken"}, {"changed": False}])
def test_packages_no_second_read_where_apt_failed_or_changed_nothing(worker_reply):
    action, calls = make_action(
        packages.ActionModule, {"name": ["jq"]}, {READ: [{"needs_apt": True}], APT: [worker_reply]}
    )
    result = action.run(task_vars={})
    assert [call[0] for call in calls] == ["sh", READ, APT]
    assert result.get("failed") == worker_reply.get("failed")


def test_a_failed_read_is_the_answer():
    action, calls = make_action(packages.ActionModule, {"name": ["jq"]}, {READ: [{"failed": True, "msg": "no dpkg"}]})
    result = action.run(task_vars={})
    assert [call[0] for call in calls] == ["sh", READ] and result["failed"] and result["msg"] == "no dpkg"


PY = "gpulab.cluster.python_packages"
PIP = "ansible.builtin.pip"


def test_python_packages_met_pins_run_no_pip():
    status = {
        "needs_pip": False,
        "installed": {"nvidia-nccl-cu12": "2.21.5"},
        "site_packages": "/v/site",
        "missing": [],
    }
    action, calls = make_action(
        python_packages.ActionModule, {"name": ["nvidia-nccl-cu12==2.21.5"], "virtualenv": "/v"}, {PY: [status]}
    )
    result = action.run(task_vars={})
    assert [call[0] for call in calls] == [PY]
    assert calls[0][1]["virtualenv_command"] == "python3 -m venv"
    assert result["site_packages"] == "/v/site" and result["needs_pip"] is False


def test_python_packages_pip_runs_and_the_virtualenv_is_read_again():
    first = {"needs_pip": True, "installed": {}, "site_packages": "", "missing": ["nvidia-nccl-cu12==2.21.5"]}
    again = {"needs_pip": False, "installed": {"nvidia-nccl-cu12": "2.21.5"}, "site_packages": "/v/site", "missing": []}
    action, calls = make_action(
        python_packages.ActionModule,
        {"name": ["nvidia-nccl-cu12==2.21.5"], "virtualenv": "/v", "virtualenv_command": "virtualenv"},
        {PY: [first, again], PIP: [{"changed": True, "cmd": "pip install"}]},
    )
    result = action.run(task_vars={})
    assert [call[0] for call in calls] == [PY, PIP, PY]
    assert all(options["virtualenv_command"] == "virtualenv" for _module, options in calls)
    assert result["cmd"] == "pip install" and result["site_packages"] == "/v/site"
    assert result["missing"] == [] and result["needs_pip"] is True
