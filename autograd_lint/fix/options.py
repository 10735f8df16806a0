"""The command-line options of the fixer: one argument group, read back as ``FixOptions``."""

from __future__ import annotations

import argparse

from autograd_lint.catalogue import RULES

# The codes that have a fixer (fix/registry.py; tests/test_catalogue.py keeps the two equal).
# Read from the catalogue, free of libcst, so that a run that has nothing to fix never loads the fixers.
FIXABLE_CODES = frozenset(code for code, info in RULES.items() if info.fixable)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    fixes = parser.add_argument_group("fixes")
    fixes.add_argument("--fix", action="store_true",
                       help="apply the safe fixes and write the files; report what remains")
    fixes.add_argument("--diff", action="store_true",
                       help="print what --fix would change as unified diffs and write nothing "
                       "(exit 1 if anything would change); wins over --fix")
    fixes.add_argument("--unsafe-fixes", action="store_true",
                       help="also apply the fixes that may change behaviour (with --fix or --diff)")


class FixOptions:
    # A plain class, not a dataclass: every run of the CLI imports this module (see selection.py).
    def __init__(self, write: bool, diff: bool, unsafe: bool) -> None:
        self.write = write  # --fix without --diff
        self.diff = diff
        self.unsafe = unsafe

    def __repr__(self) -> str:
        return f"FixOptions(write={self.write}, diff={self.diff}, unsafe={self.unsafe})"

    @property
    def active(self) -> bool:
        return self.write or self.diff

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "FixOptions":
        # `--diff --fix`: ruff lets --diff win (nothing is written); so do we.
        diff = bool(getattr(args, "diff", False))
        return cls(write=bool(getattr(args, "fix", False)) and not diff, diff=diff,
                   unsafe=bool(getattr(args, "unsafe_fixes", False)))


def fix_counts(results: list) -> tuple[int, int]:
    """(safe, unsafe) fixes available among the findings of ``results``."""
    safe = unsafe = 0
    for result in results:
        for finding in result.findings:
            if finding.fix_available:
                safe += bool(finding.fix_safe)
                unsafe += not finding.fix_safe
    return safe, unsafe


def hint_lines(results: list) -> list[str]:
    """ruff's hint after the findings: how many could be fixed, and with which option."""
    safe, unsafe = fix_counts(results)
    if not safe and not unsafe:
        return []
    parts = [f"{safe} fixable with --fix"] if safe else []
    if unsafe:
        parts.append(f"{unsafe} more with --fix --unsafe-fixes" if safe
                     else f"{unsafe} fixable with --fix --unsafe-fixes")
    return [f"[*] {'; '.join(parts)}."]
