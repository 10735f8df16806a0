"""``--format github``: workflow commands that the Actions runner parses back to our findings.

``parse_command`` reads a line the way the runner does (``ActionCommand.TryParseV2``): the
command, then ``key=value`` properties split on ``,`` up to the first ``::``, then the message;
``%XX`` escapes are undone after splitting, so escaped ``,`` ``:`` and newlines survive.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograd_lint.findings import Finding
from autograd_lint.report.github import annotation
from conftest import REPO_ROOT, run_in_process

_DATA_ESCAPES = [("%0D", "\r"), ("%0A", "\n"), ("%25", "%")]
_PROPERTY_ESCAPES = [("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")]


def _unescape(text: str, escapes: list[tuple[str, str]]) -> str:
    for escaped, plain in escapes:
        text = text.replace(escaped, plain)
    return text


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    assert line.startswith("::") and "\n" not in line and "\r" not in line, line
    head, separator, data = line[2:].partition("::")
    assert separator, line
    command, _, properties = head.partition(" ")
    parsed = {}
    for item in filter(None, properties.split(",")):
        key, equals, value = item.partition("=")
        assert equals, item
        parsed[key] = _unescape(value, _PROPERTY_ESCAPES)
    return command, parsed, _unescape(data, _DATA_ESCAPES)


def finding(**changes) -> Finding:
    fields = dict(path="src/ops.py", line=12, column=9, code="AGL201", message="ctx.x holds a tensor",
                  end_line=12, end_column=18)
    fields.update(changes)
    return Finding(**fields)


def test_every_fixture_finding_parses_back(tmp_path: Path):
    args = ("--select", "ALL", "fixtures")
    annotations = run_in_process("--format", "github", *args, cwd=REPO_ROOT)
    findings = json.loads(run_in_process("--format", "json", *args, cwd=REPO_ROOT).stdout)["findings"]
    lines = annotations.stdout.splitlines()
    assert annotations.returncode == 1 and len(lines) == len(findings) > 50
    commands = {"error": "error", "warning": "warning", "info": "notice"}
    for line, expected in zip(lines, findings):
        command, properties, message = parse_command(line)
        assert command == commands[expected["severity"]]
        assert message == expected["message"]
        assert properties["file"] == expected["path"]
        assert int(properties["line"]) == expected["line"]
        assert int(properties["endLine"]) == expected["end_line"]
        assert properties["title"] == f"{expected['code']} ({expected['name']})"
        if expected["end_line"] == expected["line"]:
            assert int(properties["col"]) == expected["column"]


def test_a_single_line_finding_has_its_columns_with_the_exclusive_end_of_every_format():
    _, properties, _ = parse_command(annotation(finding()))  # end_column=18, as JSON and SARIF say
    assert properties == {"file": "src/ops.py", "line": "12", "endLine": "12", "col": "9", "endColumn": "18",
                          "title": "AGL201 (ctx-tensor-attribute)"}


def test_a_multi_line_finding_has_lines_only():
    # The runner drops col/endColumn when endLine differs from line.
    _, properties, _ = parse_command(annotation(finding(end_line=14, end_column=3)))
    assert (properties["line"], properties["endLine"]) == ("12", "14")
    assert "col" not in properties and "endColumn" not in properties


def test_a_point_has_no_end_column():
    _, properties, _ = parse_command(annotation(finding(code="AGL000", line=1, column=1, end_line=1, end_column=1)))
    assert properties["col"] == "1" and "endColumn" not in properties


@pytest.mark.parametrize("code, command", [("AGL201", "error"), ("AGL304", "warning"), ("AGL305", "notice")])
def test_severity_picks_the_command(code: str, command: str):
    assert parse_command(annotation(finding(code=code)))[0] == command


@pytest.mark.parametrize("message", [
    "100% of the gradient",
    "line one\nline two\r\nline three",
    "a::b, c: d,e",
    "%0A is not a newline here, %25 is not a percent",
    "ünïcode ∂L/∂x",
])
def test_messages_round_trip(message: str):
    line = annotation(finding(message=message))
    assert parse_command(line)[2] == message


@pytest.mark.parametrize("path, shown", [
    ("./src/ops.py", "src/ops.py"),
    ("dir,with,commas/a:b.py", "dir,with,commas/a:b.py"),
    ("100%/ops.py", "100%/ops.py"),
])
def test_paths_round_trip(path: str, shown: str):
    assert parse_command(annotation(finding(path=path)))[1]["file"] == shown
