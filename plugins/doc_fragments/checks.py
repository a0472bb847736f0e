"""Options every gpulab validation module shares (with gpulab.cluster.read_only for the attributes)."""


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
"""
