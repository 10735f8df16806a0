"""AGL304 dot-data: .data read on a tensor inside a Function class."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.tensorness import T
from autograd_lint.findings import Finding

CODE = "AGL304"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for method in model.methods.values():
            if method.inherited:
                continue
            judge = model.judge(method)
            writes = _write_bases(method.nodes_of(cst.Assign, cst.AugAssign, cst.Call))
            lines: set[int] = set()
            for node in method.nodes_of(cst.Attribute):
                if node.attr.value != "data" or id(node) in writes:
                    continue
                if judge(node.value) is not T.TENSOR:
                    continue
                finding = module.at(
                    CODE, model, method, node,
                    ".data bypasses autograd's version counter (in-place changes go unnoticed) and breaks "
                    "double backward: use .detach()",
                )
                if finding.line not in lines:
                    lines.add(finding.line)
                    yield finding


def _write_bases(nodes) -> set[int]:
    """``x.data`` nodes used to write (``x.data = y``, ``x.data[i] = y``, ``x.data.copy_(y)``): a
    deliberate bypass of the version check, not a read (real-code-idioms.md)."""
    result: set[int] = set()
    for node in nodes:
        targets = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, cst.AugAssign):
            targets = [node.target]
        for target in targets:
            while isinstance(target, cst.Subscript):
                target = target.value
            if isinstance(target, cst.Attribute) and target.attr.value == "data":
                result.add(id(target))
            elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Attribute):
                result.add(id(target.value))
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value.endswith("_") and isinstance(node.func.value, cst.Attribute)
                and node.func.value.attr.value == "data"):
            result.add(id(node.func.value))
    return result
