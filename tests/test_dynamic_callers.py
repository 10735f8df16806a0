"""``callers.capture`` in-process: ``apply`` is put back whatever the caller does, aliases too,
and keyword arguments are placed by forward's signature (fixtures/dynamic/through_callers.py
runs the whole path through the CLI, in tests/test_dynamic.py)."""

from __future__ import annotations

import math
import sys

import pytest

torch = pytest.importorskip("torch")

from autograd_lint.dynamic import callers  # noqa: E402
from autograd_lint.dynamic.candidate import CapturedTensor  # noqa: E402


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor=2.0):
        ctx.factor = factor
        return x * factor

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


scale = Scale.apply  # a module-level alias, as packages export them


def through_alias(x):
    return scale(x * 1.0, 3.0)


def with_keywords(x):
    return Scale.apply(x, factor=0.5)


def swallows_errors(x):
    try:
        return Scale.apply(x)
    except Exception:  # noqa: BLE001 - a caller that hides failures must not hide the capture
        return x


def raises_first(x):
    raise ValueError("not this shape")


def test_the_arguments_of_the_first_call_are_kept_and_apply_is_put_back():
    x = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    captured = callers.capture(Scale, through_alias, (x,))
    assert isinstance(captured[0], CapturedTensor) and captured[0].requires_grad and captured[1] == 3.0
    assert "apply" not in Scale.__dict__ and globals()["scale"] == Scale.apply
    assert torch.equal(scale(torch.ones(1), 2.0), torch.full((1,), 2.0))  # the alias works again


def test_keywords_are_placed_by_forward_s_signature():
    captured = callers.capture(Scale, with_keywords, (torch.ones(3),))
    assert captured[1] == 0.5 and not captured[0].requires_grad


def test_a_caller_that_swallows_exceptions_is_still_stopped_at_apply():
    captured = callers.capture(Scale, swallows_errors, (torch.ones(3),))
    assert captured is not None and len(captured) == 1


def test_a_caller_that_raises_before_apply_gives_nothing():
    assert callers.capture(Scale, raises_first, (torch.ones(3),)) is None
    assert "apply" not in Scale.__dict__


def test_a_symmetric_or_triangular_matrix_keeps_its_structure():
    base = torch.rand(4, 4, dtype=torch.float64)
    assert callers.capture(Scale, with_keywords, (base + base.mT,))[0].structure == "symmetric"
    assert callers.capture(Scale, with_keywords, (base.tril() + torch.eye(4),))[0].structure == "lower-triangular"
    assert callers.capture(Scale, with_keywords, (base,))[0].structure is None


def test_an_alias_of_the_class_s_module_is_replaced_when_the_caller_lives_elsewhere():
    namespace = {"helper": through_alias}  # another module's function that reaches the alias
    exec("def outer(x):\n    return helper(x)\n", namespace)  # noqa: S102 - a module of its own
    captured = callers.capture(Scale, namespace["outer"], (torch.ones(3),))
    assert captured is not None and captured[1] == 3.0
    assert globals()["scale"] == Scale.apply


# --- the package's documented examples -------------------------------------------------------------

def documented(x):
    """Scale ``x``, with a log of what it did.

    >>> print("shown only to a reader")
    >>> import sys
    >>> sys.exit(3)
    >>> missing_name + 1
    >>> from torch.func import grad
    >>> grad(lambda t: scale(t, 2.0).sum())(torch.ones(2))
    >>> y = documented(torch.ones(2, 5))
    """
    return scale(x, 4.0)


class Undocumented(torch.autograd.Function):  # no docstring: torch.autograd.Function's has examples
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_examples_run_on_past_failures_and_exits_and_skip_transformed_tensors(capsys):
    examples = list(callers._documented_examples(Scale, sys.modules[__name__], [__file__]))
    assert [label for label, _, _ in examples] == ["documented()", "Doubled"]  # the caller's first
    _, lines, namespace = examples[0]
    captured = callers._first_apply_call(Scale, lambda: callers._run_examples(lines, namespace, math.inf), namespace)
    # sys.exit and the NameError do not stop the examples; under `grad`, apply's tensors are
    # the transform's (no values of their own): the call after it is the one kept.
    assert captured is not None and captured[0].tensor.shape == (2, 5) and captured[1] == 4.0
    assert capsys.readouterr().out == ""
    assert globals()["scale"] == Scale.apply and "apply" not in Scale.__dict__


def test_a_class_without_a_docstring_runs_no_inherited_example():
    # Only the module's own docstrings (here `documented`'s, which any class of the module may be
    # reached through), never torch.autograd.Function's.
    labels = [label for label, _, _ in callers._documented_examples(Undocumented, sys.modules[__name__], [__file__])]
    assert labels == ["documented()", "Doubled"]


class Doubled(torch.autograd.Function):
    """Twice ``x``.

    >>> Doubled.apply(torch.ones(100, requires_grad=True))
    >>> Doubled.apply(torch.ones(3, requires_grad=True))
    """

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_an_example_with_many_elements_to_check_is_kept_for_last():
    # Each `>>>` docstring is run until its first call: the 100 elements are what this one gives.
    large: list = []
    small = list(callers.example_candidates(Doubled, sys.modules[__name__], [__file__], 0, math.inf, large))
    assert small == [] and [candidate.source for candidate in large] == ["call-site"]
    assert callers._elements_checked(large[0]) == 100 > callers.MAX_EXAMPLE_ELEMENTS


def test_literal_blocks_and_fences_are_examples_too_and_prose_is_not():
    import doctest

    text = ("Scale things.\n\nExample::\n\n    x = torch.ones(2, 3)\n    y = scale(x, 5.0)\n\n"
            "Note:: prose after the marks.\n\nSee also::\n\n    the other scale, which does more\n\n"
            "```python\nscale(torch.ones(4), 6.0)\n```\n")
    blocks = callers.code_blocks(text)
    assert blocks == ["scale(torch.ones(4), 6.0)\n", "x = torch.ones(2, 3)\ny = scale(x, 5.0)\n"]
    assert callers.code_blocks("Example::\n\n    x = 1\x00\n") == []  # a NUL: no code (and no crash)
    namespace = globals()
    examples = [doctest.Example(block, "") for block in reversed(blocks)]
    captured = callers._first_apply_call(Scale, lambda: callers._run_examples(examples, namespace, math.inf), namespace)
    assert captured[0].tensor.shape == (2, 3) and captured[1] == 5.0
