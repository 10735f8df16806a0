"""``--format sarif``: SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.

One run. ``tool.driver.rules`` lists every code of the catalogue, found or not, so a code's
``ruleIndex`` never depends on what a run found; each rule carries its page (``rules/CODE.md``,
the text ``--explain`` prints) as ``help``, which GitHub shows next to the alert.

Choices, and why:
- No ``helpUri``/``informationUri``: SARIF requires absolute URIs there, and the project has no
  canonical address to point at; a ``file:`` URI would name a path on the machine that ran the
  lint. The page itself travels in ``help`` instead, with its path in the repository.
- Relative paths are URIs relative to ``%SRCROOT%`` (the current directory, given in
  ``originalUriBaseIds``); GitHub resolves them from the repository root, so run the linter
  there. Absolute paths become ``file:`` URIs.
- No ``partialFingerprints``: ``github/codeql-action/upload-sarif`` computes GitHub's own
  (``primaryLocationLineHash``) from the source, which follows code as lines move.
- Columns are 1-based and ``endColumn`` is exclusive, as SARIF defines them (and as the JSON
  report's ``end_column`` already is).
- A finding's related locations (``Finding.related``: the inherited method its reasoning reads,
  the base class a dependent's note names) are ``relatedLocations``, each a point with its message.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from functools import lru_cache
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Optional, TextIO
from urllib.parse import quote

from autograd_lint import __version__
from autograd_lint.catalogue import RULES
from autograd_lint.explain import page_path

if TYPE_CHECKING:
    from autograd_lint.findings import Finding
    from autograd_lint.report import LintRun

SARIF_VERSION = "2.1.0"
SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
TOOL_NAME = "autograd-lint"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def write(run: "LintRun", out: TextIO, color: bool) -> None:
    json.dump(sarif_log(run, os.getcwd()), out, indent=2)
    out.write("\n")


def sarif_log(run: "LintRun", cwd: str) -> dict:
    codes = list(RULES)
    rule_index = {code: index for index, code in enumerate(codes)}
    return {
        "$schema": SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": TOOL_NAME,
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [rule_descriptor(code) for code in codes],
            }},
            "invocations": [_invocation(run)],
            "originalUriBaseIds": {SRCROOT: {"uri": _directory_uri(cwd)}},
            "columnKind": "unicodeCodePoints",
            "results": [_result(finding, rule_index[finding.code]) for finding in run.findings],
        }],
    }


def _directory_uri(directory: str) -> str:
    uri = Path(directory).as_uri()
    return uri if uri.endswith("/") else uri + "/"  # a base URI must end with "/" (SARIF 3.14.14)


def rule_descriptor(code: str) -> dict:
    info = RULES[code]
    page = _page(code)
    tags = ["pytorch", "autograd"]
    if not info.default_enabled:
        tags.append("opt-in")
    if not info.static:
        tags.append("dynamic")
    return {
        "id": code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": _what_it_does(page) or info.summary},
        "help": {"text": page or info.summary, "markdown": _help_markdown(code, page or info.summary)},
        "defaultConfiguration": {"level": LEVELS[info.severity]},
        "properties": {"tags": tags},
    }


def artifact_location(path: str) -> dict:
    """A relative path as a URI under %SRCROOT% ("/"-separated, "./" dropped), else a file URI."""
    if os.path.isabs(path):
        return {"uri": Path(path).as_uri()}
    relative = posixpath.normpath(PurePath(path).as_posix())
    return {"uri": quote(relative, safe="/"), "uriBaseId": SRCROOT}


def region(finding: "Finding") -> dict:
    start = {"startLine": finding.line, "startColumn": finding.column}
    end_line, end_column = finding.end_line or finding.line, finding.end_column or finding.column
    if (end_line, end_column) <= (finding.line, finding.column):
        return start  # unknown or empty extent: a point
    return {**start, "endLine": end_line, "endColumn": end_column}


def _result(finding: "Finding", rule_index: int) -> dict:
    result = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": artifact_location(finding.path),
            "region": region(finding),
        }}],
    }
    if finding.related:
        # Other places the reasoning passes through (an inherited forward, a base class in
        # another file): viewers link them from the message.
        result["relatedLocations"] = [
            {"id": number, "physicalLocation": {
                "artifactLocation": artifact_location(place.path),
                "region": {"startLine": place.line, "startColumn": place.column},
            }, "message": {"text": place.message}}
            for number, place in enumerate(finding.related, start=1)
        ]
    if finding.confirmation is not None or finding.evidence is not None:  # --dynamic ran: what it found at runtime
        result["properties"] = {"confirmation": finding.confirmation, "evidence": finding.evidence}
    if finding.function_class:
        # Where in the code, by name: SARIF viewers group by it; GitHub ignores it.
        name = f"{finding.function_class}.{finding.method}" if finding.method else finding.function_class
        result["locations"][0]["logicalLocations"] = [
            {"fullyQualifiedName": name, "kind": "function" if finding.method else "type"}
        ]
    return result


def _invocation(run: "LintRun") -> dict:
    errors = [message for result in run.results for message in result.internal_errors]
    invocation: dict = {"executionSuccessful": not errors}
    if errors:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": message}} for message in errors
        ]
    return invocation


@lru_cache(maxsize=None)
def _page(code: str) -> Optional[str]:
    path = page_path(code)
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _what_it_does(page: Optional[str]) -> Optional[str]:
    """The "What it does" section of a rule page, as one paragraph of text."""
    if not page:
        return None
    match = re.search(r"^## What it does\n(.*?)(?=^## |\Z)", page, flags=re.M | re.S)
    return " ".join(match.group(1).split()) if match else None


def _help_markdown(code: str, text: str) -> str:
    page = page_path(code)
    where = f"rules/{page.name}" if page is not None else "rules/"
    return f"{text}\n\n---\nFrom `{where}` of autograd-lint {__version__}; `autograd-lint --explain {code}` prints it."
