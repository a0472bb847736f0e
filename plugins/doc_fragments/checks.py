"""Options and attributes every gpulab validation module shares."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  fail_on:
    description:
      - Fail the task when a check record has this status or a worse one (C(warn) also fails on C(fail));
        C(never) only reports. C(unavailable) (could not check) and C(n/a) (does not apply to this hardware)
        never fail the task.
    type: str
    choices: [fail, warn, never]
    default: fail
attributes:
  check_mode:
    description: Can run in check mode, reporting what a real run would do without doing it.
    support: full
    details: Read-only; it checks in check mode too and never reports a change.
  diff_mode:
    description: Returns a diff of what it changed, in diff mode.
    support: none
"""
