"""``--list-rules``: every rule of the catalogue, as a table or as JSON (ruff's ``rule --all``)."""

from __future__ import annotations

import json
from typing import TextIO

from autograd_lint.catalogue import RULES
from autograd_lint.fix.options import FIXABLE_CODES


def rule_rows() -> list[dict]:
    return [
        {
            "code": info.code,
            "name": info.name,
            "severity": info.severity_text,
            "default": info.default_enabled,
            "fixable": code in FIXABLE_CODES,
            "dynamic_only": not info.static,
            "summary": info.summary,
        }
        for code, info in RULES.items()
    ]


def write_rule_list(out: TextIO, output_format: str = "text") -> None:
    rows = rule_rows()
    if output_format == "json":
        json.dump(rows, out, indent=2)
        out.write("\n")
        return
    name_width = max(len(row["name"]) for row in rows)
    severity_width = max(len(row["severity"]) for row in rows)
    for row in rows:
        default = "on " if row["default"] else "off"
        fix = "fix" if row["fixable"] else "   "
        out.write(f"{row['code']}  {row['name']:<{name_width}}  {row['severity']:<{severity_width}}  "
                  f"{default}  {fix}  {row['summary']}\n")
