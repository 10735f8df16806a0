"""AGL305 backward-not-differentiable (opt-in): backward leaves autograd without @once_differentiable."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.non_differentiable import extension_module
from autograd_lint.analysis.syntax import dotted
from autograd_lint.findings import Finding

CODE = "AGL305"
_LEAVING_METHODS = frozenset({"numpy", "item", "tolist", "detach", "detach_"})


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        if backward is None or "once_differentiable" in backward.decorators:
            continue
        lines: set[int] = set()
        for node in backward.nodes:
            reason = _leaves_autograd(node, model.qualify)
            if reason is None:
                continue
            finding = module.at(
                CODE, model, backward, node,
                f"backward leaves autograd ({reason}) without @once_differentiable: double backward "
                f"silently drops this Function's term instead of raising",
            )
            if finding.line not in lines:
                lines.add(finding.line)
                yield finding


def _leaves_autograd(node: cst.CSTNode, qualify) -> Optional[str]:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        method = node.func.attr.value
        if method in _LEAVING_METHODS:
            return f".{method}()"
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        return ".data"
    if isinstance(node, cst.WithItem):
        name = dotted(node.item.func if isinstance(node.item, cst.Call) else node.item) or ""
        if qualify(name) in ("torch.no_grad", "torch.inference_mode", "torch.autograd.grad_mode.no_grad"):
            return "torch.no_grad()"
    if isinstance(node, cst.Call):
        module_path = extension_module(node, qualify)
        if module_path is not None:
            return f"a call into the extension {module_path}"
    return None
