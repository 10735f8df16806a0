"""``callers.capture`` in-process: ``apply`` is put back whatever the caller does, aliases too,
and keyword arguments are placed by forward's signature (fixtures/dynamic/through_callers.py
runs the whole path through the CLI, in tests/test_dynamic.py)."""

from __future__ import annotations

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
