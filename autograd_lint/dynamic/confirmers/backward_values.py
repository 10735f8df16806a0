"""What backward returns: how many values (AGL101/102), whether they are real gradients
(AGL107/108), computed when not needed (AGL401), or made in the wrong dtype/device (AGL402), or
missing for an input the outputs depend on (AGL308).

Most of these call the user's backward directly (``ctx.apply(*grads)`` under no_grad:
docs/runtime-mechanisms.md, M3): its raw return value is what the rule is about, before autograd
checks, casts or discards it.
"""

from __future__ import annotations

import inspect
import re

import torch

from autograd_lint.dynamic.confirmers.probe import (
    CONFIRMED, Applied, Result, Subject, Unverifiable, apply, as_gradients, backward_error, call_backward,
    confirmed, describe_error, describe_tensor, fresh_inputs, not_reproduced, output_grads,
)

COUNT_ERRORS = re.compile(r"returned an incorrect number of gradients|expected Variable or None")


def _raw_backward(applied: Applied, grads: tuple):
    try:
        return call_backward(applied, grads)
    except Unverifiable:
        raise
    except Exception as error:  # noqa: BLE001
        raise Unverifiable(f"backward raised {describe_error(error)} before returning") from error


def backward_return_count(subject: Subject) -> Result:
    """AGL101: PyTorch's own count error at a real backward; the raw count as evidence."""
    applied = apply(subject)
    expected = len(applied.require_ctx().needs_input_grad)
    returned = len(as_gradients(_raw_backward(applied, output_grads(applied))))
    counted = f"backward returned {returned} value(s) for {expected} forward input(s)"
    error = backward_error(subject)
    if error is not None and COUNT_ERRORS.search(str(error)):
        return confirmed(f"{describe_error(error)} ({counted})")
    if error is not None:
        raise Unverifiable(f"backward raised {describe_error(error)}")
    return not_reproduced(f"{counted} and PyTorch accepted them")


def backward_grad_arg_count(subject: Subject) -> Result:
    """AGL102: backward is called with one gradient per forward output; a signature that does
    not take them is a TypeError at backward."""
    applied = apply(subject)
    grads = output_grads(applied)
    backward = _user_backward(subject.function_class)
    try:
        inspect.signature(backward).bind(applied.require_ctx(), *grads)
    except TypeError as mismatch:
        error = backward_error(subject)
        shown = describe_error(error) if isinstance(error, TypeError) else f"TypeError: {mismatch}"
        return confirmed(f"{shown} (forward returned {len(grads)} output(s))")
    except ValueError as error:  # no signature (a builtin): nothing to compare
        raise Unverifiable(f"cannot read backward's signature: {error}") from error
    return not_reproduced(f"backward accepts the {len(grads)} gradient(s) of forward's "
                          f"{len(grads)} output(s)")


def _user_backward(cls: type):
    """The method PyTorch calls: vjp when only vjp is defined, else backward."""
    base = torch.autograd.Function
    return cls.vjp if cls.vjp is not base.vjp and cls.backward is base.backward else cls.backward


def stub_derivative(subject: Subject) -> Result:
    """AGL107: a stub backward/vjp returns None for every input, so inputs that require grad
    silently get no gradient (jvp stubs need forward-mode AD: not exercised here)."""
    if subject.finding.get("method") == "jvp":
        raise Unverifiable("a jvp stub shows only under forward-mode AD, which --dynamic does not run")
    applied = apply(subject)
    if not any(value.requires_grad for _, value in applied.tensor_inputs()):
        raise Unverifiable("no input requires grad on this example")
    if applied.ctx is None:
        return not_reproduced("no output requires grad (all marked non-differentiable), "
                              "so backward is never called")
    needs = tuple(applied.ctx.needs_input_grad)
    gradients = as_gradients(_raw_backward(applied, output_grads(applied)))
    wanted = [i for i, need in enumerate(needs) if need]
    if all(i >= len(gradients) or gradients[i] is None for i in wanted):
        return confirmed(f"backward returned {_show(gradients)} although needs_input_grad={needs}: "
                         f"the inputs that require grad get no gradient")
    return not_reproduced(f"backward returned {_show(gradients)} for needs_input_grad={needs}")


def _show(gradients: tuple) -> str:
    return "(" + ", ".join("None" if g is None else describe_tensor(g) if isinstance(g, torch.Tensor)
                           else type(g).__name__ for g in gradients) + ")"


def grad_output_ignored(subject: Subject) -> Result:
    """AGL108: the chain rule makes every gradient linear in grad_output; one that stays the
    same (and is not zero) when grad_output is doubled does not use it."""
    applied = apply(subject)
    grads = output_grads(applied)
    doubled = tuple(g * 2 if isinstance(g, torch.Tensor) and g.is_floating_point() else g for g in grads)
    first = as_gradients(_raw_backward(applied, grads))
    first = tuple(g.clone() if isinstance(g, torch.Tensor) else g for g in first)
    second = as_gradients(_raw_backward(applied, doubled))
    for index, (a, b) in enumerate(zip(first, second)):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.is_floating_point():
            if a.shape == b.shape and bool(torch.any(a != 0)) and torch.equal(a, b):
                return confirmed(f"the gradient for input {index} ({describe_tensor(a)}) is the same when "
                                 f"grad_output is doubled: backward does not use grad_output")
    return not_reproduced("every non-zero gradient changed when grad_output was doubled")


def needs_input_grad_unchecked(subject: Subject) -> Result:
    """AGL401: with one tensor input not requiring grad (``needs_input_grad[i]`` False), a
    backward that still returns a gradient for it computed it for nothing (PyTorch drops it)."""
    template = fresh_inputs(subject)
    candidates = [i for i, v in enumerate(template)
                  if isinstance(v, torch.Tensor) and v.requires_grad]
    if len(candidates) < 2:
        raise Unverifiable("needs two or more inputs that require grad to switch one off")
    for index in candidates:
        inputs = fresh_inputs(subject)
        inputs = inputs[:index] + (inputs[index].detach(),) + inputs[index + 1:]
        applied = apply(subject, inputs)
        gradients = as_gradients(_raw_backward(applied, output_grads(applied)))
        if index < len(gradients) and gradients[index] is not None:
            value = gradients[index]
            shown = describe_tensor(value) if isinstance(value, torch.Tensor) else type(value).__name__
            return confirmed(f"backward computed a gradient for input {index} ({shown}) although "
                             f"ctx.needs_input_grad[{index}] is False; PyTorch discards it")
    return not_reproduced(f"backward returned None for input i whenever ctx.needs_input_grad[i] was "
                          f"False (tried inputs {', '.join(map(str, candidates))})")


def factory_without_dtype_device(subject: Subject) -> Result:
    """AGL402: a factory without dtype/device follows torch's defaults, not the inputs. The raw
    gradient has the wrong dtype/device, or it changes with ``torch.set_default_dtype``
    (autograd's silent cast hides both after a real backward)."""
    applied = apply(subject)
    grads = output_grads(applied)
    try:
        gradients = as_gradients(_raw_backward(applied, grads))
    except Unverifiable as failure:
        # A float32 tensor from a factory meeting the float64 gradient in an in-place op or a
        # scatter raises ("self (Float) and source (Double)"): the bug if the default dtype fixes it.
        if failure.__cause__ is not None and _runs_with_default_dtype(applied, grads, torch.float64):
            return confirmed(f"backward raised {describe_error(failure.__cause__)} with torch's default dtype "
                             f"{_dtype_name(torch.get_default_dtype())}, and ran with float64: a factory in "
                             f"backward ignores the inputs' dtype")
        raise
    for index, (value, gradient) in enumerate(zip(applied.inputs, gradients)):
        if isinstance(value, torch.Tensor) and isinstance(gradient, torch.Tensor):
            if gradient.device != value.device:
                return confirmed(f"backward returned a gradient on {gradient.device} for input {index} "
                                 f"on {value.device}")
            if value.is_floating_point() and gradient.dtype != value.dtype:
                return confirmed(f"backward returned a {_dtype(gradient)} gradient for {_dtype(value)} "
                                 f"input {index} (autograd casts it silently)")
    control = as_gradients(_raw_backward(applied, grads))
    if not _same(gradients, control):
        raise Unverifiable("backward gives different results on two identical calls")
    previous = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64 if previous != torch.float64 else torch.float32)
        other = as_gradients(_raw_backward(applied, grads))
    finally:
        torch.set_default_dtype(previous)
    for index, (a, b) in enumerate(zip(gradients, other)):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and not _same((a,), (b,)):
            change = (f"max difference {(a.double() - b.double()).abs().max().item():.3g}"
                      if a.shape == b.shape else f"shape {tuple(a.shape)} -> {tuple(b.shape)}")
            return confirmed(f"the gradient for input {index} changes with torch's default dtype "
                             f"({change}): a factory in backward ignores the inputs' dtype")
    return not_reproduced("the raw gradients have the inputs' dtype and device and do not depend on "
                          "torch's default dtype")


def _runs_with_default_dtype(applied: Applied, grads: tuple, dtype: torch.dtype) -> bool:
    """Whether backward runs when torch's default dtype is ``dtype`` (float64 inputs: a factory
    then makes tensors that match them)."""
    previous = torch.get_default_dtype()
    if previous == dtype:
        return False
    try:
        torch.set_default_dtype(dtype)
        call_backward(applied, grads)
    except Exception:  # noqa: BLE001 - it still fails: the default dtype was not the cause
        return False
    finally:
        torch.set_default_dtype(previous)
    return True


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _dtype(value: torch.Tensor) -> str:
    return str(value.dtype).replace("torch.", "")


def _same(first: tuple, second: tuple) -> bool:
    for a, b in zip(first, second):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or a.dtype != b.dtype or not torch.equal(a, b):
                return False
        elif (a is None) != (b is None):
            return False
    return len(first) == len(second)


def gradient_dropped(subject: Subject) -> Result:
    """AGL308: backward's raw value is None for the input (``ctx.needs_input_grad[i]`` in the
    finding names it; without it, every floating input) while central differences show the
    outputs change with that input: its true gradient is not zero, and it silently gets none."""
    template = fresh_inputs(subject)
    match = re.search(r"needs_input_grad\[(\d+)\]", subject.finding.get("message") or "")
    positions = [int(match.group(1))] if match else [i for i, v in enumerate(template) if _floating(v)]
    positions = [i for i in positions if i < len(template) and _floating(template[i])]
    if not positions:
        raise Unverifiable("the input the finding names is not a floating tensor on this example")
    outcomes = []
    for position in positions:
        result = _dropped(subject, template, position)
        if result[0] == CONFIRMED:
            return result
        outcomes.append(result)
    return outcomes[0]


def _dropped(subject: Subject, template: tuple, position: int) -> Result:
    applied = apply(subject, _with_grad(template, position))
    gradients = as_gradients(_raw_backward(applied, output_grads(applied)))
    if position < len(gradients) and gradients[position] is not None:
        return not_reproduced(f"backward returned a gradient for input {position}: {_show(gradients)}")
    differentiable = [i for i, out in enumerate(applied.outputs)
                      if isinstance(out, torch.Tensor) and out.requires_grad and out.is_floating_point()]
    if not differentiable:
        raise Unverifiable("no output requires grad on this example")
    slope = _directional_derivative(subject, position, differentiable)
    if slope is None:
        raise Unverifiable("the outputs could not be evaluated at perturbed inputs")
    if slope <= 1e-6:
        return not_reproduced(f"backward returns None for input {position}, and the outputs do not change "
                              f"with it (central-difference slope {slope:.3g}): None is its true gradient")
    return confirmed(f"backward returned None for input {position}, but the outputs change with it: "
                     f"a central difference along a random direction gives a slope of norm {slope:.3g}; "
                     f"input {position}.grad stays None and it never trains")


def _floating(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _with_grad(inputs: tuple, position: int) -> tuple:
    value = inputs[position].detach().clone().requires_grad_(True)
    return inputs[:position] + (value,) + inputs[position + 1:]


def _directional_derivative(subject: Subject, position: int, outputs: list[int]):
    """The norm of d outputs / d t at t=0 for input + t * v (v random, unit norm), by central
    differences on fresh inputs; None when forward fails at a perturbed point."""
    base = fresh_inputs(subject)[position].detach()
    generator = torch.Generator().manual_seed(0)
    direction = torch.randn(base.shape, generator=generator, dtype=torch.float64).to(base.dtype)
    direction = direction / direction.norm().clamp_min(1e-12)
    step = 1e-6 if base.dtype == torch.float64 else 1e-2
    values = []
    for sign in (1, -1):
        inputs = fresh_inputs(subject)
        perturbed = (base + sign * step * direction).requires_grad_(inputs[position].requires_grad)
        inputs = inputs[:position] + (perturbed,) + inputs[position + 1:]
        try:
            with torch.no_grad():
                output = subject.function_class.apply(*inputs)
        except Exception:  # noqa: BLE001 - the user's forward can raise anything
            return None
        output = output if isinstance(output, tuple) else (output,)
        values.append([output[i].detach().double() for i in outputs])
    slopes = [((plus - minus) / (2 * step)).norm().item() for plus, minus in zip(*values)]
    return max(slopes) if slopes else 0.0
