"""AGL203 saved-tensors-in-forward: ctx.saved_tensors read inside forward or setup_context."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL203"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for method in model.forward_methods:
            if method.inherited:
                continue
            for node in method.nodes_of(cst.Attribute):
                if model.is_saved_tensors(node, method):
                    yield module.at(
                        CODE, model, method, node,
                        f"ctx.{node.attr.value} read in {method.name}: it is empty there "
                        f"(PyTorch silently returns ()); use the tensors directly",
                    )
