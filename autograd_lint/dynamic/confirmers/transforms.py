"""torch.func, autocast and undefined gradients: vmap (AGL601), forward-mode AD (AGL602), the
autocast decorators (AGL603), a forward that takes ctx (AGL605), a tensor captured from an
enclosing function (AGL606), gradients left None by ``set_materialize_grads(False)`` (AGL306)."""

from __future__ import annotations

import inspect
import re
from typing import Optional

import torch

from autograd_lint.dynamic.autocast_check import autocast_failure, plain_run_error
from autograd_lint.dynamic.confirmers.probe import (
    Result, Subject, Unverifiable, apply, confirmed, describe_error, describe_tensor, describe_value,
    fresh_inputs, not_reproduced, output_grads, patched,
)

_VMAP_CONFLICT = "generate_vmap_rule=True and an overridden vmap"


def vmap_rule_conflict(subject: Subject) -> Result:
    """AGL601: ``torch.func.vmap`` over the Function raises PyTorch's RuntimeError naming both rules."""
    inputs = fresh_inputs(subject)
    # A batch of two along a new first dimension of every tensor input; other values unbatched.
    batched = tuple(torch.stack([value, value]) if isinstance(value, torch.Tensor) else value for value in inputs)
    in_dims = tuple(0 if isinstance(value, torch.Tensor) else None for value in inputs)
    try:
        torch.func.vmap(subject.function_class.apply, in_dims=in_dims)(*batched)
    except Exception as error:  # noqa: BLE001 - the user's code can raise anything
        if _VMAP_CONFLICT in str(error):
            return confirmed(f"torch.func.vmap over {subject.name} raised {describe_error(error)}")
        raise Unverifiable(f"torch.func.vmap over {subject.name} raised {describe_error(error)}") from error
    return not_reproduced(f"torch.func.vmap over {subject.name} ran: the class does not have both rules at runtime")


def jvp_without_save_for_forward(subject: Subject) -> Result:
    """AGL602: ``torch.func.jvp`` raises inside the class's jvp, and ``ctx.saved_tensors`` is
    empty there."""
    inputs = fresh_inputs(subject)
    tensors = [i for i, value in enumerate(inputs) if isinstance(value, torch.Tensor) and value.is_floating_point()]
    if not tensors:
        raise Unverifiable("no floating-point tensor input to give a tangent to")
    seen: list[int] = []
    original = subject.function_class.jvp

    def spy(ctx, *tangents):
        seen.append(len(ctx.saved_tensors))
        return original(ctx, *tangents)

    def function(*primals):
        arguments = list(inputs)
        for index, primal in zip(tensors, primals):
            arguments[index] = primal
        return subject.function_class.apply(*arguments)

    primals = tuple(inputs[i].detach() for i in tensors)
    tangents = tuple(torch.ones_like(p) for p in primals)
    with patched(subject.function_class, "jvp", staticmethod(spy)):
        try:
            torch.func.jvp(function, primals, tangents)
        except Exception as error:  # noqa: BLE001
            if seen and seen[0] == 0:
                return confirmed(f"torch.func.jvp over {subject.name} raised {describe_error(error)}: "
                                 "ctx.saved_tensors was () in jvp")
            raise Unverifiable(f"torch.func.jvp over {subject.name} raised {describe_error(error)}") from error
    if seen and seen[0] == 0:
        return confirmed(f"ctx.saved_tensors was () in {subject.name}.jvp under torch.func.jvp")
    return not_reproduced(f"torch.func.jvp over {subject.name} ran, with {seen[0] if seen else 0} saved tensor(s) "
                          "in jvp")


_NEEDS_SETUP_CONTEXT = "it must override the setup_context"


def forward_takes_ctx(subject: Subject) -> Result:
    """AGL605: ``torch.func.vjp`` over the Function (its floating-point tensor inputs the primals)
    raises PyTorch's RuntimeError asking for setup_context; apply raises it before forward runs."""
    inputs = fresh_inputs(subject)
    tensors = [i for i, value in enumerate(inputs) if isinstance(value, torch.Tensor) and value.is_floating_point()]
    if not tensors:
        raise Unverifiable("no floating-point tensor input to transform over")

    def function(*primals):
        arguments = list(inputs)
        for index, primal in zip(tensors, primals):
            arguments[index] = primal
        return subject.function_class.apply(*arguments)

    try:
        torch.func.vjp(function, *(inputs[i].detach() for i in tensors))
    except Exception as error:  # noqa: BLE001 - the user's code can raise anything
        if _NEEDS_SETUP_CONTEXT in str(error):
            return confirmed(f"torch.func.vjp over {subject.name} raised {describe_error(error)}")
        raise Unverifiable(f"torch.func.vjp over {subject.name} raised {describe_error(error)}") from error
    return not_reproduced(f"torch.func.vjp over {subject.name} ran: the class has setup_context at runtime")


def captured_tensor(subject: Subject) -> Result:
    """AGL606: the tensor forward reads from its closure (the name the finding gives), swapped for
    a copy that requires grad: the output changes with its value, yet after backward its .grad is
    still None."""
    fresh_inputs(subject)  # inputs that cannot be built say so first
    name = _captured_name(subject)
    forward = subject.function_class.forward
    cells = dict(zip(getattr(getattr(forward, "__code__", None), "co_freevars", ()), forward.__closure__ or ()))
    if name is None or name not in cells:
        raise Unverifiable(f"forward of {subject.name} has no closure variable {name!r}")
    cell = cells[name]
    original = cell.cell_contents
    if not isinstance(original, torch.Tensor) or not original.is_floating_point():
        raise Unverifiable(f"the captured `{name}` is {describe_value(original)}, not a floating-point tensor")
    captured = original.detach().clone().requires_grad_()
    try:
        cell.cell_contents = captured
        applied = apply(subject)
        outputs = [(i, value) for i, value in enumerate(applied.outputs)
                   if isinstance(value, torch.Tensor) and value.requires_grad]
        if not outputs:
            raise Unverifiable("no output of apply(...) requires grad: backward never runs on this example")
        grads = output_grads(applied)
        try:
            torch.autograd.backward([value for _, value in outputs], [grads[i] for i, _ in outputs])
        except Exception as error:  # noqa: BLE001 - the user's backward can raise anything
            raise Unverifiable(f"backward raised {describe_error(error)}") from error
        cell.cell_contents = (original.detach() * 1.5 + 1).to(original.dtype)
        changed = apply(subject)
    finally:
        cell.cell_contents = original
    if captured.grad is not None:
        return not_reproduced(f"the captured `{name}` got a gradient through {subject.name}")
    moved = [i for i, _ in outputs if isinstance(changed.outputs[i], torch.Tensor)
             and not torch.equal(changed.outputs[i].detach(), applied.outputs[i].detach())]
    if not moved:
        return not_reproduced(f"the output of {subject.name} does not change with the captured `{name}`")
    return confirmed(f"output {moved[0]} of {subject.name} changes with the captured `{name}` "
                     f"({describe_tensor(original)}), yet after backward its .grad is None although it requires grad")


def _captured_name(subject: Subject) -> Optional[str]:
    match = re.search(r"reads `(\w+)`", subject.finding.get("message") or "")
    return match.group(1) if match else None


def undefined_grad_arithmetic(subject: Subject) -> Result:
    """AGL306: forward, then a real backward through the engine with one output left unused
    (the gradient the finding names, else each in turn), as a caller who drops that output. With
    ``set_materialize_grads(False)`` its gradient reaches backward as None: a TypeError confirms."""
    outputs = [i for i, value in enumerate(apply(subject).outputs)
               if isinstance(value, torch.Tensor) and value.requires_grad]
    if len(outputs) < 2:
        raise Unverifiable("fewer than two outputs require grad: no output's gradient can be left undefined")
    named = _named_gradient_position(subject)
    for unused in [named] if named in outputs else outputs:
        applied = apply(subject)
        grads = output_grads(applied)
        used = [i for i in outputs if i != unused]
        try:
            torch.autograd.backward([applied.outputs[i] for i in used], [grads[i] for i in used])
        except TypeError as error:
            return confirmed(f"backward with output {unused} unused (its gradient None) raised {describe_error(error)}")
        except Exception as error:  # noqa: BLE001 - the user's backward can raise anything
            raise Unverifiable(f"backward with output {unused} unused raised {describe_error(error)}") from error
    left = f"output {named}" if named in outputs else f"each of the {len(outputs)} outputs in turn"
    return not_reproduced(f"backward ran with {left} unused")


def _named_gradient_position(subject: Subject) -> Optional[int]:
    """The output whose gradient parameter the finding names ("so grad_b is None ..."), by its
    place among backward's parameters after ctx; None when that cannot be read."""
    match = re.search(r"so (\w+) is None", subject.finding.get("message") or "")
    if not match:
        return None
    try:
        names = list(inspect.signature(subject.function_class.backward).parameters)[1:]
    except (TypeError, ValueError):
        return None
    return names.index(match.group(1)) if match.group(1) in names else None


def autocast_decorator_mismatch(subject: Subject) -> Result:
    """AGL603: a lone @custom_bwd raises in every backward (it reads ``ctx._fwd_used_autocast``,
    which only @custom_fwd sets): that AttributeError confirms. Otherwise forward under
    ``torch.autocast("cpu", dtype=torch.bfloat16)``, backward after it, with the class's
    decorators pointed at the CPU (the AGL906 check, dynamic/autocast_check.py): an exception that
    the same calls without autocast do not raise confirms."""
    fresh_inputs(subject)  # inputs that cannot be built make the finding unverified, not refuted
    plain = plain_run_error(subject.function_class, subject.make_inputs)
    if plain is not None and "_fwd_used_autocast" in plain:  # @custom_bwd without @custom_fwd
        return confirmed(f"{plain}, without autocast: @custom_bwd reads what only @custom_fwd sets on the ctx")
    if plain is not None:  # the Function fails without autocast: autocast cannot be judged
        raise Unverifiable(f"without autocast, {plain}")
    failure = autocast_failure(subject.function_class, subject.make_inputs)
    if failure is not None:
        return confirmed(failure.message)
    return not_reproduced(f"{subject.name} ran forward under CPU autocast (bfloat16) and backward after it")
