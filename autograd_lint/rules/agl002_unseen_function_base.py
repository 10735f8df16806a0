"""AGL002 unseen-function-base: a class derives from a base that this run cannot see, so whether
it is a Function class (and what the other rules would say of it) is unknown. The model marks
such a base (``ClassInfo.unseen_bases``: a relative import in a module of no package, as the
text on stdin without ``--stdin-filename`` or a file copied alone is); this notice says so on
the class line, instead of a silent "All checks passed"."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.snippet import Span
from autograd_lint.findings import Finding

CODE = "AGL002"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for info in module.index.classes:
        if info.is_function or not info.unseen_bases:
            continue  # (a Function class is checked whatever else it derives from)
        base, source = next(iter(info.unseen_bases.items()))
        column = info.node.col_offset + 1
        yield module.finding(
            CODE, Span(info.line, column, info.line, column),
            f"{info.name} is not checked: its base {base} comes from `{source}`, a relative import the run "
            "cannot follow (no package around the text); if it is a Function class, lint from the project "
            "root or name the file with --stdin-filename PATH")
