"""Attributes of every gpulab module that only reads."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check mode, reporting what a real run would do without doing it.
    support: full
    details: Read-only; it runs in check mode too and never reports a change.
  diff_mode:
    description: Returns a diff of what it changed, in diff mode.
    support: none
"""
