"""``--format json``: the stable schema of docs/json-schema.md (``version`` 1)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from autograd_lint.report import LintRun

SCHEMA_VERSION = 1


def write(run: "LintRun", out: TextIO, color: bool) -> None:
    document = {
        "version": SCHEMA_VERSION,
        "findings": [finding.to_json() for finding in run.findings],
        "summary": run.summary(),
    }
    json.dump(document, out, indent=2)
    out.write("\n")
