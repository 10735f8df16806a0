"""AGL201 ctx-tensor-attribute: a tensor stored as a ctx attribute instead of with save_for_backward."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.tensorness import T
from autograd_lint.findings import Finding

CODE = "AGL201"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for attr_set in model.ctx_attribute_sets:
            if attr_set.method.inherited or attr_set.value is None:
                continue
            if model.judge(attr_set.method)(attr_set.value) is T.TENSOR:
                # An element of a container (`ctx.tensors = (None, B)`) is reported where it is written.
                where = attr_set.statement if attr_set.index is None else attr_set.value
                yield module.at(
                    CODE, model, attr_set.method, where,
                    f"{attr_set.shown} holds a tensor: use ctx.save_for_backward(...) "
                    f"(a ctx attribute skips the in-place check and can leak the graph)",
                )
