"""AGL303 inplace-input-no-mark-dirty: an in-place operation on a forward input without ctx.mark_dirty."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import Finding
from autograd_lint.rules._inplace import input_writes, write_related

CODE = "AGL303"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        forward = model.own("forward")
        if forward is None or not model.known_inputs:
            continue
        dirty = model.marked_dirty
        if dirty is None:
            continue  # mark_dirty with something we cannot read: trust it
        # Only inputs known to be tensors: `n += 1` on a plain number is no in-place write.
        tensors = {name for name, verdict in model.input_tensorness.items() if verdict is Tensorness.TENSOR}
        # An input backward never returns a gradient for is a buffer forward fills (running
        # statistics, an output buffer): autograd differentiates nothing through it here, and any
        # other op that saved it still raises on its version counter, so nothing is silent.
        inputs = model.known_inputs
        positions = {p.name: i for i, p in enumerate(inputs)}
        tensors = {n for n in tensors if model.provenance.input_gets_gradient(positions[n])}
        # "Write and return" (`x.mul_(c); return x`) where every caller rebinds its name to the
        # result (`q = Rope.apply(q, cos, sin)`): no caller keeps the tensor whose history is now
        # stale, and an op that saved it still raises on its version counter, so nothing is silent.
        # (A write through .data hides from that counter: AGL304 still reports it.)
        tensors = {n for n in tensors if not model.rebound_in_place(n)}
        for write in input_writes(model, forward, tensors - dirty):
            yield module.at(
                CODE, model, forward, write.statement,
                f"in-place {write.described} on the input {write.name} without ctx.mark_dirty({write.name}): "
                f"autograd does not know the input changed and later gradients are silently wrong",
                related=write_related(module, write),
            )
