"""Run a module's main() the way Ansible does, capturing exit_json/fail_json."""

from unittest import mock

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class ModuleExit(Exception):
    def __init__(self, result, failed):
        super().__init__(result)
        self.result = result
        self.failed = failed


def _exit_json(self, **kwargs):
    raise ModuleExit(kwargs, failed=False)


def _fail_json(self, msg, **kwargs):
    raise ModuleExit({"msg": msg, **kwargs}, failed=True)


@pytest.fixture
def run_module():
    """run_module(main, args, run_command=callable|None, check_mode=False) -> (result, failed)."""

    def run(main, args, run_command=None, check_mode=False):
        args = dict(args, _ansible_check_mode=check_mode)
        patches = [
            mock.patch.object(basic.AnsibleModule, "exit_json", _exit_json),
            mock.patch.object(basic.AnsibleModule, "fail_json", _fail_json),
        ]
        if run_command is not None:
            patches.append(
                mock.patch.object(basic.AnsibleModule, "run_command", side_effect=run_command, autospec=True)
            )
        with patch_module_args(args):
            for p in patches:
                p.start()
            try:
                main()
            except ModuleExit as done:
                return done.result, done.failed
            finally:
                for p in patches:
                    p.stop()
        raise AssertionError("module returned without exit_json or fail_json")

    return run
