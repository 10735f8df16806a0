"""A rule follows a call of forward/backward into a module-level helper of the file only when the
call passes what the rule follows (``FunctionModel.helper(call, passing=...)``): a helper given
none of it is never parsed (on torch, 31 helpers were parsed for nothing), and one given a
tracked tensor still is, with its finding."""

from __future__ import annotations

from autograd_lint.analysis.project import ProjectFacts
from autograd_lint.analysis.source_file import SourceFile
from autograd_lint.catalogue import RULES
from autograd_lint.pipeline import lint_file

MODULE = '''import torch


def _halve_(t):
    t.data.mul_(0.5)
    return t


def _shape_of(n):
    return (n, n)


class Halve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        size = _shape_of(3)
        _halve_(x)
        return x.view(-1).clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * 0.5
'''


def test_only_helpers_given_a_followed_argument_are_parsed(tmp_path):
    path = tmp_path / "halve.py"
    path.write_text(MODULE)
    source = SourceFile(str(path))
    result = lint_file(source, frozenset(RULES), ProjectFacts(), True, True)
    # the in-place write through .data in the helper given the input x is still found
    assert [(f.code, f.line) for f in result.findings if f.code == "AGL303"] == [("AGL303", 17)]
    assert "_halve_" in source._module_functions
    assert "_shape_of" not in source._module_functions  # given only the constant 3
