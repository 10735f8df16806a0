"""AGL307 input-returned-without-mark-dirty: forward returns one of its inputs as it came in, or a
view of it, without ``ctx.mark_dirty``.

PyTorch then gives the caller a view of the input made inside the custom Function, and any
in-place operation on that output (or on the input, before the output is next used) raises far
from here. Only a crash, and only if a caller writes in place: a warning.
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.non_differentiable import marked_output_names
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import Finding
from autograd_lint.rules._inplace import input_writes

CODE = "AGL307"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        forward = model.own("forward")
        if forward is None or not model.known_inputs:
            continue
        dirty = model.marked_dirty
        non_differentiable = marked_output_names(model)
        if dirty is None or non_differentiable is None:
            continue  # marks we cannot read: trust them
        inputs = model.known_inputs
        for returned in model.provenance.returned_inputs():
            name = inputs[returned.position].name
            if name in dirty:
                continue  # mark_dirty: the output is the input object itself, not a view
            if isinstance(returned.value, cst.Name) and returned.value.value in non_differentiable:
                continue  # no grad_fn: PyTorch leaves it a plain alias
            verdict = model.input_tensorness.get(name, Tensorness.UNKNOWN)
            if verdict is Tensorness.NOT_TENSOR or (verdict is Tensorness.UNKNOWN and not returned.view):
                continue  # a number or an object passes through harmlessly
            if any(True for _ in input_writes(model, forward, {name})):
                continue  # written in place in forward: AGL303's finding
            shown = f"the input {name}" if not returned.view else f"a view of the input {name}"
            yield module.at(
                CODE, model, forward, returned.value,
                f"forward returns {shown} without ctx.mark_dirty({name}): PyTorch hands the caller a "
                f"view of {name} made inside this Function, and an in-place op on that output later "
                f"(`out += 1`, `relu_()`, `inplace=True`) raises 'This view was created inside a custom "
                f"Function'; return a copy (`.clone()`) if callers may write into it",
            )
