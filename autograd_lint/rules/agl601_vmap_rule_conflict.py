"""AGL601 vmap-rule-conflict: ``generate_vmap_rule = True`` and a ``vmap`` staticmethod in one class."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL601"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        if "vmap" not in model.class_helpers:
            continue
        for statement in model.parsed.node.body.body:
            assignment = _generate_vmap_rule_true(statement)
            if assignment is not None:
                yield module.at(
                    CODE, model, None, assignment,
                    "generate_vmap_rule = True next to a vmap staticmethod: torch.func.vmap raises "
                    "RuntimeError on this Function (it refuses to choose); keep one of the two",
                )


def _generate_vmap_rule_true(statement: cst.CSTNode) -> cst.CSTNode | None:
    """The ``generate_vmap_rule = True`` of a class-body line, if it is one."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for small in statement.body:
        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value == "True" and any(
                isinstance(target.target, cst.Name) and target.target.value == "generate_vmap_rule"
                for target in small.targets):
            return small
        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and (
                small.target.value == "generate_vmap_rule" and isinstance(small.value, cst.Name)
                and small.value.value == "True"):
            return small
    return None
