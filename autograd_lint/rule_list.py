"""``--list-rules``: every rule of the catalogue, as a table or as JSON (ruff's ``rule --all``)."""

from __future__ import annotations

import json
import re
import textwrap
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


# The text list fits a terminal: a rule's first line has its code, name, severity, default and
# fix; its summary (and a graded rule's severities in full) follows on indented lines wrapped to
# this width. ``--explain CODE`` prints the whole page.
LINE_WIDTH = 100
_INDENT = " " * 8
_LEVELS = ("error", "warning", "info")


def write_rule_list(out: TextIO, output_format: str = "text") -> None:
    rows = rule_rows()
    if output_format == "json":
        json.dump(rows, out, indent=2)
        out.write("\n")
        return
    name_width = max(len(row["name"]) for row in rows)
    levels = [_short_severity(row["severity"]) for row in rows]
    severity_width = max(len(level) for level in levels)
    for row, level in zip(rows, levels):
        default = "on " if row["default"] else "off"
        fix = "fix" if row["fixable"] else "   "
        dynamic = "  --dynamic" if row["dynamic_only"] else ""
        out.write(f"{row['code']}  {row['name']:<{name_width}}  {level:<{severity_width}}  {default}  {fix}"
                  f"{dynamic}".rstrip() + "\n")
        details = [row["summary"]]
        if level != row["severity"]:  # graded: say when each level applies
            details.append(f"severity: {row['severity']}")
        for detail in details:
            for line in textwrap.wrap(detail, LINE_WIDTH, initial_indent=_INDENT, subsequent_indent=_INDENT + "  ",
                                      break_on_hyphens=False):
                out.write(line + "\n")


def _short_severity(text: str) -> str:
    """``error (write) / warning (read)`` -> ``error/warning``: the levels a rule can report."""
    found = [level for level in _LEVELS if re.search(rf"\b{level}\b", text)]
    found.sort(key=text.index)
    return "/".join(found) or text
