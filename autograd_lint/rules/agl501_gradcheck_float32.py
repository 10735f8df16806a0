"""AGL501 gradcheck-float32: gradcheck/gradgradcheck on inputs that are not float64."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL501"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for call in module.index.gradcheck_calls:
        if call.float32_inputs:
            yield module.finding(
                CODE, call,
                f"{call.function_name} on float32 inputs: finite differences in float32 fail even for "
                f"correct gradients; build the inputs with dtype=torch.double",
            )
