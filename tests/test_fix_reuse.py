"""What a fixing run takes from its own earlier lints instead of linting again must be what a
fresh lint gives (``pipeline.remember_lints``): the lint of the written file with the project's
facts is the last round's lint of that text only when the facts are the same."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_in_process, write

BASE_WITHOUT_BACKWARD = """import torch


class Base(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.x = x
        return x * w


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.x = x
        return x * w

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.x, None
"""

# Another file of the project derives from Base and gives it a backward: with the project's
# facts Base is no AGL105; the file alone (as each round lints it) says it is.
SUBCLASS = """import torch

from fns import Base


class Sub(Base):
    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.x, None
"""


def _report(completed) -> dict:
    """The JSON report, but the run's time."""
    report = json.loads(completed.stdout)
    del report["summary"]["seconds"]
    return report


def _counting_lints(monkeypatch) -> list[str]:
    """The texts the rules run on, one entry per lint that is not taken from an earlier one."""
    from autograd_lint import pipeline

    linted: list[str] = []
    rules = pipeline._rules_and_suppressions

    def counting(source, *args, **kwargs):
        linted.append(source.text)
        return rules(source, *args, **kwargs)

    monkeypatch.setattr(pipeline, "_rules_and_suppressions", counting)
    return linted


def test_the_lint_after_fixing_reads_the_projects_facts_not_the_rounds(tmp_path: Path, monkeypatch):
    write(tmp_path / "pyproject.toml", "[tool.autograd-lint]\n")
    write(tmp_path / "sub.py", SUBCLASS)
    target = write(tmp_path / "fns.py", BASE_WITHOUT_BACKWARD)
    linted = _counting_lints(monkeypatch)
    fixed = run_in_process("--no-cache", "--fix", "--unsafe-fixes", "--format", "json", target.name, cwd=tmp_path)
    after = target.read_text()
    assert "ctx.save_for_backward(x)" in after
    # The report, with the project's facts, is a lint of its own: not the round's, which
    # linted the fixed text alone, where Base has no backward anyone gives it.
    assert linted.count(after) == 2
    from autograd_lint.engine import lint_text
    from autograd_lint.selection import CodeSet

    assert "AGL105" in {f.code for f in lint_text(str(target), after, CodeSet(frozenset({"AGL105"}))).findings}
    fresh = run_in_process("--no-cache", "--format", "json", target.name, cwd=tmp_path)
    assert "AGL105" not in {f["code"] for f in _report(fixed)["findings"]}
    assert (_report(fixed), fixed.returncode) == (_report(fresh), fresh.returncode)


def test_the_lint_after_fixing_a_file_alone_is_the_last_rounds(tmp_path: Path, monkeypatch):
    target = write(tmp_path / "fns.py", BASE_WITHOUT_BACKWARD)
    linted = _counting_lints(monkeypatch)
    fixed = run_in_process("--no-cache", "--fix", "--unsafe-fixes", "--format", "json", target.name, cwd=tmp_path)
    after = target.read_text()
    assert "ctx.save_for_backward(x)" in after
    assert linted.count(after) == 1  # the last round's lint, taken again after writing
    fresh = run_in_process("--no-cache", "--format", "json", target.name, cwd=tmp_path)
    assert "AGL105" in {f["code"] for f in _report(fixed)["findings"]}
    assert (_report(fixed), fixed.returncode) == (_report(fresh), fresh.returncode)
