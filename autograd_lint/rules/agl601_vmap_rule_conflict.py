"""AGL601 vmap-rule-conflict: ``generate_vmap_rule = True`` and a ``vmap`` staticmethod in one class."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL601"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        assignment = model.generate_vmap_rule_true if "vmap" in model.class_helpers else None
        if assignment is not None:
            yield module.at(
                CODE, model, None, assignment,
                "generate_vmap_rule = True next to a vmap staticmethod: torch.func.vmap raises "
                "RuntimeError on this Function (it refuses to choose); keep one of the two",
            )
