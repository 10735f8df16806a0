"""A finding can carry its own severity (AGL304: a write through .data is an error, a read a
warning): every output of the real CLI, and flake8, show the finding's severity, not the code's."""

from __future__ import annotations

import json
import re

from conftest import REPO_ROOT, run_cli
from test_flake8 import run_flake8

SOURCE = '''import torch


class WriteAndRead(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        x.data.copy_(y)
        ctx.mark_dirty(x)
        ctx.save_for_backward(y)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return grad_out * y.data, None
'''
WRITE_LINE, READ_LINE = 7, 15


def _lint(tmp_path, *args: str):
    (tmp_path / "graded.py").write_text(SOURCE, encoding="utf-8")
    return run_cli("--select", "AGL304", *args, "graded.py", cwd=tmp_path)


def test_json_and_sarif_carry_each_findings_severity(tmp_path):
    findings = json.loads(_lint(tmp_path, "--format", "json").stdout)["findings"]
    assert [(f["line"], f["code"], f["severity"]) for f in findings] == [
        (WRITE_LINE, "AGL304", "error"), (READ_LINE, "AGL304", "warning")]
    sarif = json.loads(_lint(tmp_path, "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    assert [(r["locations"][0]["physicalLocation"]["region"]["startLine"], r["level"]) for r in results] == [
        (WRITE_LINE, "error"), (READ_LINE, "warning")]


def test_github_annotations_pick_the_command_per_finding(tmp_path):
    lines = _lint(tmp_path, "--format", "github").stdout.splitlines()
    commands = [(re.match(r"::(\w+) ", line).group(1), int(re.search(r"line=(\d+)", line).group(1)))
                for line in lines if line.startswith("::")]
    assert commands == [("error", WRITE_LINE), ("warning", READ_LINE)]


def test_statistics_count_each_severity_of_a_graded_code(tmp_path):
    rows = [line.split() for line in _lint(tmp_path, "--statistics").stdout.splitlines()]
    assert sorted(rows) == [["1", "AGL304", "dot-data", "(error)"], ["1", "AGL304", "dot-data", "(warning)"]]


def test_flake8_shows_the_harm_of_each_finding(tmp_path):
    """flake8 has no severity: the message says which harm it is, as the CLI's does."""
    (tmp_path / "graded.py").write_text(SOURCE, encoding="utf-8")
    cli = {f["line"]: f["message"] for f in json.loads(_lint(tmp_path, "--format", "json").stdout)["findings"]}
    result = run_flake8("--select", "AGL304", "graded.py", cwd=tmp_path)
    shown = {int(line.split(":")[1]): line.split("AGL304 ", 1)[1] for line in result.stdout.splitlines()}
    assert shown == cli
    assert "through .data" in shown[WRITE_LINE] and "double backward" in shown[READ_LINE]


def test_the_catalogue_shows_the_grading():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "| dot-data | error (write) / warning (read, or a rebound scratch write) |" in readme
    page = (REPO_ROOT / "rules" / "AGL304.md").read_text(encoding="utf-8")
    assert "Severity: error (write) / warning (read, or a rebound scratch write)" in page
    explained = run_cli("--explain", "AGL304", cwd=REPO_ROOT).stdout
    assert "Severity: error (write) / warning (read, or a rebound scratch write)" in explained


def test_agl105_is_a_warning_only_where_a_caller_is_seen_to_need_the_gradient():
    proc = run_cli("--format", "json", "--no-cache", "--select", "AGL105", "fixtures/AGL105", cwd=REPO_ROOT)
    by_class = {f["function_class"]: f["severity"] for f in json.loads(proc.stdout)["findings"]}
    assert by_class["TrainedWithoutBackward"] == "warning"  # its layer passes a trainable nn.Parameter
    assert by_class["ForwardOnly"] == by_class["NmsIndices"] == by_class["NoGradForward"] == "info"
