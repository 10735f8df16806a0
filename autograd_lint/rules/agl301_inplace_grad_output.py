"""AGL301 inplace-grad-output: an in-place operation on a gradient parameter of backward (or an alias)."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding
from autograd_lint.rules._inplace import grad_output_writes, write_related

CODE = "AGL301"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        if backward is None:
            continue
        for write in grad_output_writes(model, backward):
            yield module.at(
                CODE, model, backward, write.statement,
                f"in-place {write.described} on the incoming gradient {write.name}: PyTorch may share this "
                f"buffer with other branches; clone it first ({write.name} = {write.name}.clone())",
                related=write_related(module, write),
            )
