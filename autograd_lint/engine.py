"""Runs the analysis over files: the one entry point the CLI (and later flake8) call.

STUB: the analysis is being written; for now every file yields no findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from autograd_lint.findings import Finding


class Selection(Protocol):
    def is_enabled(self, code: str) -> bool: ...


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    function_classes: int = 0
    # "path: what went wrong" for failures of the linter itself (a rule crashing on this file).
    internal_errors: list[str] = field(default_factory=list)


def lint_paths(paths: Sequence[str], selection_for: Callable[[str], Selection]) -> list[FileResult]:
    """Lint every file (already discovered) and return one result per file, in order.

    ``selection_for(path)`` gives the codes enabled for that file (select/ignore/per-file-ignores).
    Unreadable or unparsable files give one AGL000 finding; nothing here raises for bad input.
    """
    return [FileResult(path=p) for p in paths]
