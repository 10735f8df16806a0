"""``--statistics``: one line per code with its count, most frequent first (as ruff prints it).

Printed instead of the finding lines, to stdout:

    3  AGL201  ctx-tensor-attribute
    1  AGL101  backward-return-count

A code whose findings carry their own severity (AGL304) gets a line per severity:
``2  AGL304  dot-data (error)``. With ``--format json``, a list of ``{"code", "name",
"severity", "count", "fixable"}`` (``fixable``: how many of them ``--fix`` can fix).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, TextIO

from autograd_lint.catalogue import RULES
from autograd_lint.report.text import style

if TYPE_CHECKING:
    from autograd_lint.report import LintRun


def write(run: "LintRun", out: TextIO, color: bool, as_json: bool = False) -> None:
    """``as_json``: a JSON list instead, one object per line of the table (``[]`` for none)."""
    # A rule graded by harm (AGL304) counts each severity on its own line: "2  AGL304  dot-data (error)".
    def key(finding) -> tuple[str, str]:
        return finding.code, finding.severity if RULES[finding.code].graded else ""

    counts = Counter(key(finding) for finding in run.findings)
    if as_json:
        fixable = Counter(key(finding) for finding in run.findings if finding.fix_available)
        rows = [{"code": code, "name": RULES[code].name, "severity": severity or RULES[code].severity,
                 "count": count, "fixable": fixable[(code, severity)]}
                for (code, severity), count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
        json.dump(rows, out, indent=2)
        out.write("\n")
        return
    if not counts:
        return
    width = len(str(max(counts.values())))
    for (code, severity), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        graded = f" ({severity})" if severity else ""
        out.write(f"{count:>{width}}  {style(code, '1', color)}  {RULES[code].name}{graded}\n")
