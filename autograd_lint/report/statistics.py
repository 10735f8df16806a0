"""``--statistics``: one line per code with its count, most frequent first (as ruff prints it).

Printed instead of the finding lines, to stdout:

    3  AGL201  ctx-tensor-attribute
    1  AGL101  backward-return-count

A code whose findings carry their own severity (AGL304) gets a line per severity:
``2  AGL304  dot-data (error)``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, TextIO

from autograd_lint.catalogue import RULES
from autograd_lint.report.text import style

if TYPE_CHECKING:
    from autograd_lint.report import LintRun


def write(run: "LintRun", out: TextIO, color: bool) -> None:
    # A rule graded by harm (AGL304) counts each severity on its own line: "2  AGL304  dot-data (error)".
    counts = Counter((finding.code, finding.severity if RULES[finding.code].graded else "")
                     for finding in run.findings)
    if not counts:
        return
    width = len(str(max(counts.values())))
    for (code, severity), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        graded = f" ({severity})" if severity else ""
        out.write(f"{count:>{width}}  {style(code, '1', color)}  {RULES[code].name}{graded}\n")
