"""The table of what a ctx has from torch (analysis/ctx_api.py) against the installed torch.

A member torch adds and the table lacks would make every read of it in backward a false AGL206
error; so each public or private member of the real ctx classes must be in the table, and each
entry of the table must be a member there (or say why not)."""

from __future__ import annotations

import pytest

from autograd_lint.analysis.ctx_api import C_FUNCTION_BASE, CTX_API, OLDER_TORCH, PER_CLASS

torch = pytest.importorskip("torch")


def _members(cls) -> set[str]:
    return {name for name in dir(cls) if not (name.startswith("__") and name.endswith("__"))}


def _real_ctx_members() -> set[str]:
    from torch.autograd.function import BackwardCFunction, FunctionCtx

    return _members(FunctionCtx) | _members(BackwardCFunction) | _members(torch._C._FunctionBase)


def _ctx_of_a_real_function():
    seen = {}

    class CtxProbe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen["ctx"] = ctx
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    CtxProbe.apply(torch.ones(2, requires_grad=True))
    return seen["ctx"]


def test_every_member_of_torchs_ctx_classes_is_in_the_table():
    missing = _real_ctx_members() - set(CTX_API)
    assert not missing, f"torch {torch.__version__} gives a ctx members analysis/ctx_api.py lacks: {sorted(missing)}"


def test_every_member_a_real_ctx_has_is_in_the_table():
    ctx = _ctx_of_a_real_function()
    missing = _members(type(ctx)) - set(CTX_API)
    assert not missing, f"a real ctx has members analysis/ctx_api.py lacks: {sorted(missing)}"


def test_every_entry_of_the_table_is_a_member_of_torch_or_says_why_not():
    ctx = _ctx_of_a_real_function()
    real = _real_ctx_members() | _members(type(ctx)) | {"__class__", "__dict__"}
    stale = {name for name, origin in CTX_API.items() if name not in real and origin != OLDER_TORCH}
    assert not stale, f"analysis/ctx_api.py lists members torch {torch.__version__} does not have: {sorted(stale)}"
    assert {name for name, origin in CTX_API.items() if origin == PER_CLASS} <= _members(type(ctx))


def test_the_c_base_entries_come_from_the_c_base():
    wrong = {name for name, origin in CTX_API.items()
             if origin == C_FUNCTION_BASE and name not in _members(torch._C._FunctionBase)}
    assert not wrong, sorted(wrong)


def test_the_backward_c_function_entries_come_from_it():
    from torch.autograd.function import BackwardCFunction

    wrong = {name for name, origin in CTX_API.items()
             if origin.endswith("BackwardCFunction") and name not in _members(BackwardCFunction)}
    assert not wrong, sorted(wrong)
