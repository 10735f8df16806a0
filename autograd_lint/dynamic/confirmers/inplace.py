"""In-place changes autograd does not see: on grad_output (AGL301), on saved tensors in
backward (AGL302), on inputs in forward (AGL303), and through ``.data`` (AGL304).

Every tensor has a version counter (``_version``) that in-place ops bump; values are compared too,
because a write through ``.data`` changes values without bumping the version.
"""

from __future__ import annotations

import torch

from autograd_lint.dynamic.confirmers.double_backward import double_backward_check
from autograd_lint.dynamic.confirmers.probe import (
    Result, Subject, Unverifiable, apply, call_backward, confirmed, describe_error, fresh_inputs,
    not_reproduced, output_grads, tensors_in,
)


class _Snapshot:
    """A tensor's version and a copy of its values, to tell later whether it was changed."""

    def __init__(self, value: torch.Tensor) -> None:
        self.value = value
        self.version = value._version
        self.copy = value.detach().clone()

    def change(self) -> str:
        """'' when unchanged, else what changed ('version 0 -> 1, values changed')."""
        parts = []
        if self.value._version != self.version:
            parts.append(f"version {self.version} -> {self.value._version}")
        now = self.value.detach()
        if now.shape != self.copy.shape or not torch.equal(now, self.copy):
            parts.append("values changed" if self.value._version != self.version
                         else "values changed with no version bump")
        return ", ".join(parts)


def _backward(applied, grads) -> None:
    try:
        call_backward(applied, grads)
    except Unverifiable:
        raise
    except Exception as error:  # noqa: BLE001
        raise Unverifiable(f"backward raised {describe_error(error)}") from error


def inplace_grad_output(subject: Subject) -> Result:
    """AGL301: backward called directly with dense grad_outputs of our own
    (docs/runtime-mechanisms.md, M6); a changed value or version afterwards means backward wrote
    into the engine's gradient buffer."""
    applied = apply(subject)
    grads = output_grads(applied)
    snapshots = [(i, _Snapshot(g)) for i, g in enumerate(grads) if isinstance(g, torch.Tensor)]
    _backward(applied, grads)
    for index, snapshot in snapshots:
        change = snapshot.change()
        if change:
            return confirmed(f"grad_output {index} changed in place by backward ({change})")
    return not_reproduced("backward left every grad_output unchanged (same version and values)")


def inplace_saved_tensor(subject: Subject) -> Result:
    """AGL302: saved_tensors_hooks see each tensor saved for backward
    (docs/runtime-mechanisms.md, M4); with the ctx's tensor attributes, each is snapshotted after
    forward and compared after backward."""
    packed: list[torch.Tensor] = []

    def pack(value: torch.Tensor) -> torch.Tensor:
        packed.append(value)
        return value

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda value: value):
        applied = apply(subject)
    ctx = applied.require_ctx()
    watched = [(f"saved tensor {i}{_which(t, applied)}", _Snapshot(t)) for i, t in enumerate(packed)]
    for name, value in vars(ctx).items():
        watched += [(f"ctx.{name}{_which(t, applied)}", _Snapshot(t)) for t in tensors_in(value)]
    if not watched:
        return not_reproduced("forward saved no tensor for backward on this example")
    _backward(applied, output_grads(applied))
    for name, snapshot in watched:
        change = snapshot.change()
        if change:
            return confirmed(f"{name} changed in place by backward ({change}); the caller's tensor "
                             f"changes with it and a second backward raises")
    return not_reproduced(f"backward left the {len(watched)} saved tensor(s) unchanged")


def _which(value: torch.Tensor, applied) -> str:
    for index, argument in enumerate(applied.inputs):
        if value is argument:
            return f" (input {index})"
    for index, output in enumerate(applied.outputs):
        if value is output:
            return f" (output {index})"
    return ""


def inplace_input_no_mark_dirty(subject: Subject) -> Result:
    """AGL303: an input's version or values change across apply (docs/runtime-mechanisms.md, M7)
    while the output is not the input itself (with ``mark_dirty``, PyTorch returns the very input
    object: ``y is x``)."""
    inputs = fresh_inputs(subject)
    snapshots = [(i, _Snapshot(v)) for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)]
    applied = apply(subject, inputs)
    for index, snapshot in snapshots:
        change = snapshot.change()
        if not change:
            continue
        if any(output is snapshot.value for output in applied.outputs):
            return not_reproduced(f"input {index} was changed in place ({change}) and marked dirty: "
                                  f"the output is the input object itself")
        return confirmed(f"input {index} changed in place by forward without mark_dirty ({change})")
    return not_reproduced("forward left every input unchanged (same version and values)")


def dot_data(subject: Subject) -> Result:
    """AGL304. In backward, ``.data`` cuts double backward: the gradgradcheck probe of AGL305.
    In forward, ``.data`` shares storage but not the version counter: a saved tensor that does
    not follow its input's version bump (docs/runtime-mechanisms.md, M4 and M5), or an input
    changed with no version bump."""
    if subject.finding.get("method") in ("backward", "vjp", "jvp"):
        return double_backward_check(subject)
    inputs = fresh_inputs(subject)
    snapshots = [(i, _Snapshot(v)) for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)]
    packed: list[torch.Tensor] = []

    def pack(value: torch.Tensor) -> torch.Tensor:
        packed.append(value)
        return value

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda value: value):
        applied = apply(subject, inputs)
    for index, snapshot in snapshots:
        if snapshot.change() == "values changed with no version bump":
            return confirmed(f"input {index} was changed in forward with no version bump (through .data): "
                             f"autograd's in-place checks cannot see it")
    saved = packed + [t for value in vars(applied.ctx or object()).values() for t in tensors_in(value)]
    for index, value in applied.tensor_inputs():
        aliases = [t for t in saved if t is not value and _shares_storage(t, value)]
        if not aliases:
            continue
        before = [t._version for t in aliases]
        with torch.no_grad():
            value.add_(0)  # bumps the version, keeps the values (docs/runtime-mechanisms.md, M5)
        if any(t._version == v for t, v in zip(aliases, before)):
            return confirmed(f"a tensor kept for backward shares input {index}'s storage but not its "
                             f"version counter (.data): an in-place change to input {index} after forward "
                             f"would go undetected")
    return not_reproduced("no tensor kept for backward bypasses its input's version counter, and "
                          "forward changed no input behind autograd's back")


def _shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and a.numel() > 0
    except Exception:  # noqa: BLE001 - sparse/meta tensors have no plain storage
        return False


_CUSTOM_VIEW_ERROR = ("is a view and is being modified inplace", "created inside a custom Function",
                      "function that returns multiple views")


def input_returned_without_mark_dirty(subject: Subject) -> Result:
    """AGL307: an output that is a view of an input (``out._base`` is the input,
    docs/runtime-mechanisms.md, F17), written in place on a fresh call: PyTorch's view+inplace
    error for custom Functions confirms."""
    applied = apply(subject)
    applied.require_ctx()
    views = [index for index, output in enumerate(applied.outputs)
             if isinstance(output, torch.Tensor) and _view_of_input(output, applied.inputs)]
    if not views:
        return not_reproduced("no output of apply(...) is a view of an input (the outputs are new tensors "
                              "or detached aliases)")
    for index in views:
        fresh = apply(subject)
        output = fresh.outputs[index]
        try:
            with torch.enable_grad():
                output.add_(0)
        except RuntimeError as error:
            if any(part in str(error) for part in _CUSTOM_VIEW_ERROR):
                return confirmed(f"output {index} is a view of an input; output.add_(0) raised "
                                 f"{describe_error(error)}")
            raise Unverifiable(f"output.add_(0) raised {describe_error(error)}") from error
    return not_reproduced(f"output(s) {', '.join(map(str, views))} are views of inputs, but an in-place "
                          f"add_(0) on each ran without error")


def _view_of_input(output: torch.Tensor, inputs: tuple) -> bool:
    if not output._is_view():
        return False
    base = output._base
    for value in inputs:
        if isinstance(value, torch.Tensor) and (base is value or (value._is_view() and base is value._base)):
            return True
    return False
