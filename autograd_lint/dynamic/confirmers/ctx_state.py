"""What forward leaves on the ctx: tensor attributes (AGL201), saved values (AGL202, AGL204,
AGL205), ``saved_tensors`` read too early (AGL203), attributes backward misses (AGL206).

The ctx of a call is ``y.grad_fn`` and its attributes are ``vars(y.grad_fn)``
(docs/runtime-mechanisms.md, M1 and M2). Calls made *during* forward are seen by spies set on
``F._backward_cls`` (the ctx's class) for one apply, then removed.
"""

from __future__ import annotations

from typing import Any

import torch

from autograd_lint.dynamic.confirmers.probe import (
    Applied, Result, Subject, Unverifiable, apply, as_gradients, call_backward, confirmed,
    describe_error, describe_tensor, describe_value, fresh_inputs, not_reproduced, output_grads,
    patched, tensors_in,
)


def ctx_tensor_attribute(subject: Subject) -> Result:
    """AGL201 and AGL207: a tensor among the ctx attributes after apply (``save_for_backward`` tensors are
    not attributes). Says when it is an input (no in-place check) or an output (a cycle)."""
    applied = apply(subject)
    attributes = vars(applied.require_ctx())
    name = subject.ctx_attribute()
    if name is not None and name not in attributes:
        return not_reproduced(f"ctx.{name} was not set on this example's path through forward")
    candidates = {name: attributes[name]} if name is not None else attributes
    for attr, value in candidates.items():
        tensors = tensors_in(value)
        if tensors:
            what = describe_tensor(tensors[0])
            if value is not tensors[0]:
                what = f"{type(value).__name__} holding a {what}"
            return confirmed(f"ctx.{attr} is a {what} kept as an attribute{_relation(tensors[0], applied)}")
    if name is not None:
        return not_reproduced(f"ctx.{name} is a {describe_value(attributes[name])}, not a tensor")
    return not_reproduced("no ctx attribute holds a tensor after forward")


ctx_tensor_bypasses_hooks = ctx_tensor_attribute  # AGL207: the same check, on the tensors AGL201 leaves to it


def _relation(value: torch.Tensor, applied: Applied) -> str:
    for index, output in enumerate(applied.outputs):
        if value is output:
            return f" (it is output {index}: ctx -> output -> grad_fn=ctx is a reference cycle)"
    for index, argument in enumerate(applied.inputs):
        if value is argument:
            return f" (it is input {index}: an in-place change to it after forward goes undetected)"
    return ""


def save_non_tensor(subject: Subject) -> Result:
    """AGL202: PyTorch raises at the end of apply when grad is recorded."""
    inputs = fresh_inputs(subject)
    if not any(isinstance(v, torch.Tensor) and v.requires_grad for v in inputs):
        raise Unverifiable("no input requires grad, and PyTorch checks saved values only then")
    calls: list[tuple] = []
    try:
        with _spy_on_save(subject, calls):
            apply(subject, inputs)
    except Unverifiable as failure:
        error = failure.__cause__
        if isinstance(error, TypeError) and "save_for_backward can only save" in str(error):
            return confirmed(describe_error(error))
        raise
    saved = ", ".join(describe_value(v) for call in calls for v in call) or "nothing"
    return not_reproduced(f"save_for_backward accepted everything it was given ({saved})")


def _spy_on_save(subject: Subject, calls: list[tuple]):
    """Record the arguments of every ``ctx.save_for_backward`` call, then do the real save."""
    original = torch.autograd.function.FunctionCtx.save_for_backward

    def spy(ctx: Any, *tensors: Any) -> None:
        calls.append(tensors)
        original(ctx, *tensors)

    return patched(subject.function_class._backward_cls, "save_for_backward", spy)


def saved_tensors_in_forward(subject: Subject) -> Result:
    """AGL203: a spy on ``ctx.saved_tensors`` (and ``saved_variables``) records reads during
    apply; in forward/setup_context it silently returns ``()``."""
    reads: list[tuple[str, Any]] = []
    ctx_class = subject.function_class._backward_cls
    inputs = fresh_inputs(subject)
    with _spy_on_read(ctx_class, "saved_tensors", reads), _spy_on_read(ctx_class, "saved_variables", reads):
        try:
            apply(subject, inputs)
            error = None
        except Unverifiable as failure:
            error = failure.__cause__
    if reads:
        attr, value = reads[0]
        shown = describe_value(value) if not isinstance(value, BaseException) else describe_error(value)
        evidence = f"ctx.{attr} was read during forward/setup_context and gave {shown}"
        return confirmed(evidence + (f"; apply then raised {describe_error(error)}" if error else ""))
    if error is not None:
        raise Unverifiable(f"{subject.name}.apply(...) raised {describe_error(error)}")
    return not_reproduced("forward and setup_context did not read ctx.saved_tensors on this example")


def _spy_on_read(ctx_class: type, attr: str, reads: list):
    descriptor = getattr(torch._C._FunctionBase, attr)  # the C getter the spy wraps

    def read(ctx: Any) -> Any:
        try:
            value = descriptor.__get__(ctx)
        except Exception as error:  # noqa: BLE001 - record it, then let the user's code see it
            reads.append((attr, error))
            raise
        reads.append((attr, value))
        return value

    return patched(ctx_class, attr, property(read))


def save_twice(subject: Subject) -> Result:
    """AGL204: a spy counts ``save_for_backward`` calls in one apply; only the last is kept.
    (saved_tensors_hooks cannot see this: they pack the final set only.)"""
    calls: list[tuple] = []
    with _spy_on_save(subject, calls):
        apply(subject)
    counts = ", then ".join(str(len(call)) for call in calls) or "no"
    if len(calls) >= 2:
        return confirmed(f"save_for_backward was called {len(calls)} times in one apply (with {counts} "
                         f"value(s)); only the last call's tensors reach backward")
    return not_reproduced(f"save_for_backward was called {len(calls)} time(s) in one apply")


def saved_count_mismatch(subject: Subject) -> Result:
    """AGL205: backward's unpacking of ``ctx.saved_tensors`` raises (a direct call:
    docs/runtime-mechanisms.md, M3)."""
    applied = apply(subject)
    ctx = applied.require_ctx()
    saved = len(ctx.saved_tensors)
    try:
        call_backward(applied, output_grads(applied))
    except (ValueError, TypeError) as error:
        if "values to unpack" in str(error) or "only integer tensors" in str(error):
            return confirmed(f"{describe_error(error)} ({saved} tensor(s) saved)")
        raise Unverifiable(f"backward raised {describe_error(error)}") from error
    except Exception as error:  # noqa: BLE001
        raise Unverifiable(f"backward raised {describe_error(error)}") from error
    return not_reproduced(f"backward unpacked the {saved} saved tensor(s) without error")


def ctx_attr_undefined(subject: Subject) -> Result:
    """AGL206: the attribute is missing from the ctx after forward, and backward's read of it
    raises AttributeError (a direct call: docs/runtime-mechanisms.md, M3)."""
    name = subject.ctx_attribute()
    if name is None:
        raise Unverifiable("the finding does not name the ctx attribute")
    applied = apply(subject)
    ctx = applied.require_ctx()
    if hasattr(ctx, name):
        return not_reproduced(f"ctx.{name} is set after forward (a {describe_value(getattr(ctx, name))})")
    try:
        as_gradients(call_backward(applied, output_grads(applied)))
    except AttributeError as error:
        return confirmed(describe_error(error))
    except Exception as error:  # noqa: BLE001
        raise Unverifiable(f"ctx.{name} is not set after forward, but backward raised "
                           f"{describe_error(error)}") from error
    return not_reproduced(f"ctx.{name} is not set after forward, but backward ran without reading it")
