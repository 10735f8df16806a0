"""AGL302 inplace-saved-tensor: an in-place operation on a saved tensor inside backward."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding
from autograd_lint.rules._inplace import saved_tensor_writes

CODE = "AGL302"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        if backward is None:
            continue
        for write in saved_tensor_writes(model, backward):
            yield module.at(
                CODE, model, backward, write.statement,
                f"in-place {write.described} on the saved tensor {write.name}: it silently changes the "
                f"caller's tensor and breaks a second backward; work on a copy",
            )
