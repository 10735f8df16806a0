"""AGL207 ctx-tensor-bypasses-hooks: a tensor kept as a ctx attribute without AGL201's harm (a
private intermediate, an index tensor, an input backward returns None for and reads only for its
shape): saved-tensor hooks and torch.func transforms still do not see it."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding
from autograd_lint.rules._ctx_tensor import ctx_tensors

CODE = "AGL207"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for found in ctx_tensors(model):
            if found.harm is not None:
                continue  # AGL201's
            attr_set = found.attr_set
            yield module.at(
                CODE, model, attr_set.method, found.where,
                f"{attr_set.shown} holds a tensor outside save_for_backward: saved-tensor hooks "
                f"(activation offloading, checkpointing) and torch.func transforms do not see it; "
                f"use ctx.save_for_backward(...)",
            )
