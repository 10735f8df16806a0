"""Rough edges a new user hit, each with the behaviour of ruff and flake8: a closed pipe, a
missing path among several, --statistics as JSON, the list of rules, one unit for sizes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, run_cli

BAD = (REPO_ROOT / "fixtures" / "AGL201" / "bad.py").read_text(encoding="utf-8")


def test_a_closed_pipe_ends_the_run_quietly_with_the_findings_status(tmp_path: Path) -> None:
    """`autograd-lint --format json . | head -2`: no message, and the status the findings give."""
    for i in range(40):  # enough report to fill the pipe's buffer
        (tmp_path / f"m{i}.py").write_text(BAD, encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "autograd_lint", "--format", "json", "--no-cache", "."],
                               cwd=tmp_path, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout.readline() and process.stdout.readline()
    process.stdout.close()  # what `head -2` does
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1, stderr
    assert "Traceback" not in stderr and "error" not in stderr.lower(), stderr


def test_a_missing_path_is_reported_and_the_others_are_linted(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(BAD, encoding="utf-8")
    result = run_cli("--no-cache", "ops.py", "gone.py", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "gone.py: no such file or directory" in result.stderr
    assert "ops.py:15:9: AGL201" in result.stdout  # linted all the same
    only_missing = run_cli("--no-cache", "gone.py", cwd=tmp_path)
    assert only_missing.returncode == 2 and not only_missing.stdout


def test_statistics_as_json(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(BAD, encoding="utf-8")
    result = run_cli("--no-cache", "--statistics", "--format", "json", "ops.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    (row,) = json.loads(result.stdout)
    text = run_cli("--no-cache", "--statistics", "ops.py", cwd=tmp_path).stdout
    assert text.split() == [str(row["count"]), "AGL201", "ctx-tensor-attribute"]
    assert row["severity"] == "error" and 0 < row["fixable"] <= row["count"]
    refused = run_cli("--no-cache", "--statistics", "--format", "sarif", "ops.py", cwd=tmp_path)
    assert refused.returncode == 2 and "--statistics" in refused.stderr


def test_every_rule_is_listed(tmp_path: Path) -> None:
    from autograd_lint.catalogue import RULES

    text = run_cli("--list-rules", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    # One line per rule starts with its code; its summary follows on indented lines.
    assert [line.split()[0] for line in text.stdout.splitlines() if not line.startswith(" ")] == list(RULES)
    rows = json.loads(run_cli("--list-rules", "--format", "json", cwd=tmp_path).stdout)
    assert [row["code"] for row in rows] == list(RULES)
    agl101 = next(row for row in rows if row["code"] == "AGL101")
    assert agl101["fixable"] is True and agl101["default"] is True and agl101["name"] == "backward-return-count"


def test_one_unit_for_sizes_everywhere(tmp_path: Path) -> None:
    """5,242,880 bytes is 5 MiB in the help, the README and the AGL000 page, and a file over the
    limit is measured in the same unit."""
    help_text = " ".join(run_cli("--help", cwd=tmp_path).stdout.split())
    assert "5242880 = 5 MiB" in help_text
    for document in (REPO_ROOT / "README.md", REPO_ROOT / "rules" / "AGL000.md"):
        text = document.read_text(encoding="utf-8")
        assert "5 MiB" in text and "5 MB" not in text, document
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 1_000_000)  # 6,000,000 bytes
    result = run_cli("--no-cache", "big.py", cwd=tmp_path)
    assert "file is 5.7 MiB, over the 5.0 MiB limit" in result.stdout


def test_a_syntax_error_is_reported_where_python_places_it(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(
        "import torch\n\n\nclass F(torch.autograd.Function):\n    def forward(ctx, x:\n        pass\n",
        encoding="utf-8")
    result = run_cli("--no-cache", "--format", "json", "broken.py", cwd=tmp_path)
    (finding,) = json.loads(result.stdout)["findings"]
    try:
        compile((tmp_path / "broken.py").read_text(encoding="utf-8"), "broken.py", "exec")
    except SyntaxError as error:
        where = (error.lineno, error.offset)
    assert (finding["code"], finding["line"], finding["column"]) == ("AGL000", *where) == ("AGL000", 5, 16)


def test_a_diff_of_the_current_directory_applies_with_git(tmp_path: Path) -> None:
    """`autograd-lint --diff .` names files `a/myops/x.py`, not `a/./myops/x.py`, which git rejects."""
    package = tmp_path / "myops"
    package.mkdir()
    (package / "x.py").write_text(
        "import torch\n\n\nclass F(torch.autograd.Function):\n    def forward(ctx, x):\n        return x * 2\n\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", "."], cwd=tmp_path, check=True)
    result = run_cli("--no-cache", "--diff", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("--- a/myops/x.py\n+++ b/myops/x.py\n"), result.stdout
    # A path outside the current directory stays absolute on both sides.
    elsewhere = run_cli("--no-cache", "--diff", str(package / "x.py"), cwd=REPO_ROOT)
    assert elsewhere.stdout.startswith(f"--- {package / 'x.py'}\n+++ {package / 'x.py'}\n"), elsewhere.stdout
    (tmp_path / "fix.patch").write_text(result.stdout, encoding="utf-8")
    subprocess.run(["git", "apply", "fix.patch"], cwd=tmp_path, check=True)
    assert "    @staticmethod\n    def forward(ctx, x):" in (package / "x.py").read_text(encoding="utf-8")


def _flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "AGL", *args], cwd=cwd,
                          env=environment, capture_output=True, text=True, timeout=120)


def test_flake8_and_the_cli_agree_on_a_file_python_cannot_decode(tmp_path: Path) -> None:
    """Latin-1 bytes without a coding line: Python refuses the file, the CLI says AGL000, and
    flake8 (which falls back to Latin-1 and would lint it) must say the same."""
    latin1 = BAD.replace("import torch", "import torch  # caf\u00e9", 1).encode("latin-1")
    (tmp_path / "latin1.py").write_bytes(latin1)
    (tmp_path / "declared.py").write_bytes(b"# -*- coding: latin-1 -*-\n" + latin1)
    (tmp_path / "utf8.py").write_bytes(latin1.decode("latin-1").encode("utf-8"))
    cli = run_cli("--no-cache", "latin1.py", "declared.py", "utf8.py", cwd=tmp_path)
    flake8 = _flake8("latin1.py", "declared.py", "utf8.py", cwd=tmp_path)

    def codes(output: str, name: str) -> list[tuple[str, str]]:
        return sorted((line.split(":")[1], line.split(": ")[1].split()[0])
                      for line in output.splitlines() if line.startswith(f"{name}:"))

    message = ("AGL000 could not decode as utf-8 (no PEP 263 coding cookie, so Python reads it as utf-8): "
               "invalid continuation byte")
    assert f"latin1.py:1:1: {message}" in cli.stdout and f"latin1.py:1:1: {message}" in flake8.stdout, flake8
    for name in ("latin1.py", "declared.py", "utf8.py"):
        assert codes(cli.stdout, name) == codes(flake8.stdout, name), (name, cli.stdout, flake8.stdout)
    declared = {code for _, code in codes(flake8.stdout, "declared.py")}
    assert "AGL201" in declared and "AGL000" not in declared


NEWER_SYNTAX = '''import torch

type Pair = tuple[torch.Tensor, torch.Tensor]


def first[T](xs: list[T]) -> T:
    return xs[0]


def pick[T = torch.Tensor](xs: list[T]) -> T:
    return xs[0]


class Keep[T](torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        print(f"{"nested" + "quotes"}")
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.x
'''


def test_newer_python_syntax_is_linted_whatever_python_runs_the_linter(tmp_path: Path) -> None:
    """3.12's type aliases, type parameters and PEP 701 f-strings, 3.13's type parameter
    defaults: libcst reads them on every Python, so the result must not depend on the running
    one (before, Python 3.9-3.11 reported AGL000 "could not parse")."""
    (tmp_path / "newer.py").write_text(NEWER_SYNTAX, encoding="utf-8")
    older = NEWER_SYNTAX.replace("type Pair =", "Pair =").replace("[T](", "(").replace("[T = torch.Tensor](", "(")
    older = older.replace("class Keep[T](", "class Keep(").replace('f"{"nested" + "quotes"}"', "'nested quotes'")
    (tmp_path / "older.py").write_text(older, encoding="utf-8")
    result = run_cli("--no-cache", "--format", "json", "newer.py", "older.py", cwd=tmp_path)
    findings = json.loads(result.stdout)["findings"]
    by_file = {name: [(f["line"], f["column"], f["code"]) for f in findings if f["path"] == name]
               for name in ("newer.py", "older.py")}
    assert by_file["newer.py"] == by_file["older.py"] == [(17, 9, "AGL201")], result.stdout
    # A real syntax error is still one, where Python 3.13 places it, not at the first newer
    # construct (where an older Python stops).
    broken_text = NEWER_SYNTAX.replace("def backward(ctx, grad):", "def backward(ctx grad):")
    broken_text = broken_text.replace('f"{"nested" + "quotes"}"', "'nested quotes'")
    (tmp_path / "broken.py").write_text(broken_text, encoding="utf-8")
    broken = json.loads(run_cli("--no-cache", "--format", "json", "broken.py", cwd=tmp_path).stdout)["findings"]
    assert [(f["code"], f["line"], f["column"]) for f in broken] == [("AGL000", 22, 22)], broken


def test_the_readmes_pre_commit_rev_is_a_commit_sha_or_an_existing_tag() -> None:
    """`rev: v0.1.0` named a tag that does not exist: pre-commit failed with `pathspec 'v0.1.0'
    did not match`. Until releases are tagged the README shows a full commit SHA."""
    import re

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## pre-commit"):]
    revs = re.findall(r"^\s*rev:\s*(\S+)", section, re.M)
    assert revs, "the pre-commit section shows a rev"
    tags = subprocess.run(["git", "tag", "--list"], cwd=REPO_ROOT, capture_output=True, text=True).stdout.split()
    for rev in revs:
        assert re.fullmatch(r"[0-9a-f]{40}", rev) or rev in tags, rev


def test_a_syntax_error_answered_from_the_cache_keeps_its_position(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(BAD.replace("def backward(ctx, grad_output):", "def backward(ctx grad_output):",
                                                 1), encoding="utf-8")
    runs = [run_cli("--cache-dir", str(tmp_path / "cache"), "ops.py", cwd=tmp_path).stdout for _ in range(2)]
    assert runs[0] == runs[1], runs
    assert ": AGL000 could not parse: SyntaxError" in runs[0] and ":1:1: AGL000" not in runs[0], runs[0]
