"""AGL201 ctx-tensor-attribute: a tensor kept as a ctx attribute where that does harm: forward's
output (a reference cycle), or an input that gets a gradient and whose values backward reads (an
in-place change after forward goes unnoticed)."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding
from autograd_lint.rules._ctx_tensor import ctx_tensors

CODE = "AGL201"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for found in ctx_tensors(model):
            if found.harm is None:
                continue  # AGL207's
            attr_set = found.attr_set
            yield module.at(
                CODE, model, attr_set.method, found.where,
                f"{attr_set.shown} holds a tensor outside save_for_backward; {found.harm}. "
                f"Use ctx.save_for_backward(...)",
            )
