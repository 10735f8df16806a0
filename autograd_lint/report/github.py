"""``--format github``: one GitHub Actions workflow command per finding, which the runner turns
into an annotation on the file and line (in the job summary and the pull request's diff):

    ::error file=src/ops.py,line=12,endLine=12,col=9,endColumn=18,title=AGL201 (ctx-tensor-attribute)::ctx.x holds a tensor: ...

Severity maps to the command: error -> ``error``, warning -> ``warning``, info -> ``notice``.
Escaping follows the runner's rules (and ``@actions/core``): in the message ``%``, CR and LF
become ``%25``, ``%0D``, ``%0A``; property values also escape ``:`` and ``,``.

The runner drops ``col``/``endColumn`` when ``endLine`` differs from ``line``, so a finding
spanning lines is annotated by its lines alone. Columns are those of every other format: 1-based,
``endColumn`` exclusive (the column just after the finding's last character), the same numbers
as ``column``/``end_column`` in JSON and ``startColumn``/``endColumn`` in SARIF
(docs/json-schema.md, "Positions").
GitHub shows at most 10 annotations of each kind per step: use SARIF for whole-repository
results.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import PurePath
from typing import TYPE_CHECKING, TextIO

from autograd_lint.report.text import confirmation_suffix

if TYPE_CHECKING:
    from autograd_lint.findings import Finding
    from autograd_lint.report import LintRun

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def write(run: "LintRun", out: TextIO, color: bool) -> None:
    for finding in run.findings:
        out.write(annotation(finding) + "\n")


def annotation(finding: "Finding") -> str:
    properties = [("file", _path(finding.path)), ("line", str(finding.line))]
    end_line = finding.end_line or finding.line
    properties.append(("endLine", str(max(end_line, finding.line))))
    if end_line <= finding.line:
        properties.append(("col", str(finding.column)))
        end_column = finding.end_column or finding.column
        if end_column > finding.column:  # (a point has no extent to show)
            properties.append(("endColumn", str(end_column)))
    properties.append(("title", f"{finding.code} ({finding.name})"))
    fields = ",".join(f"{name}={escape_property(value)}" for name, value in properties)
    # With --dynamic, the confirmation and its evidence, as the text format shows them.
    message = finding.message + confirmation_suffix(finding)
    return f"::{COMMANDS[finding.severity]} {fields}::{escape_data(message)}"


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _path(path: str) -> str:
    """"/"-separated and without "./": the runner makes paths relative to the workspace."""
    if os.path.isabs(path):
        return PurePath(path).as_posix()
    return posixpath.normpath(PurePath(path).as_posix())
