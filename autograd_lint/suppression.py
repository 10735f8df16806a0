"""Suppression comments: ``# noqa`` / ``# noqa: AGL201`` on a line (flake8's semantics) and
``# autograd-lint: disable=AGL201,AGL3`` on a class line, for the whole class."""

from __future__ import annotations

import re
from typing import Iterable, Optional

from autograd_lint.findings import Finding

# flake8's own pattern: codes are separated by commas and/or whitespace.
_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_NOQA_CODES = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_DISABLE = re.compile(r"#\s*autograd-lint:\s*disable=(?P<codes>[A-Z0-9, ]+)", re.IGNORECASE)


def noqa_codes(line: str) -> Optional[frozenset[str]]:
    """None: no noqa comment; empty set: a bare ``# noqa`` (everything); else the codes."""
    match = _NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    return frozenset(c.upper() for c in _NOQA_CODES.findall(codes)) if codes else frozenset()


def _matches(code: str, selectors: frozenset[str]) -> bool:
    return any(code.startswith(s) for s in selectors)


def disabled_codes(line: str) -> frozenset[str]:
    match = _DISABLE.search(line)
    if match is None:
        return frozenset()
    return frozenset(c.strip().upper() for c in match.group("codes").split(",") if c.strip())


def apply_suppressions(
    findings: Iterable[Finding],
    lines: list[str],
    class_spans: Iterable[tuple[int, int, int]],
    honour_noqa: bool = True,
) -> list[Finding]:
    """Drop suppressed findings. ``class_spans`` are (comment line, first line, last line) of each
    Function class: a disable comment on the class line covers every line of the class."""
    disabled: list[tuple[int, int, frozenset[str]]] = []
    for comment_line, first, last in class_spans:
        if 0 < comment_line <= len(lines):
            codes = disabled_codes(lines[comment_line - 1])
            if codes:
                disabled.append((first, last, codes))
    kept = []
    for finding in findings:
        if any(first <= finding.line <= last and _matches(finding.code, codes) for first, last, codes in disabled):
            continue
        if honour_noqa and 0 < finding.line <= len(lines):
            codes = noqa_codes(lines[finding.line - 1])
            if codes is not None and (not codes or _matches(finding.code, codes)):
                continue
        kept.append(finding)
    return kept
