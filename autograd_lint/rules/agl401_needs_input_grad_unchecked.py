"""AGL401 needs-input-grad-unchecked: a costly per-input gradient computed without a needs_input_grad guard."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.grad_guards import GradGuards
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import all_nodes, code_children, dotted, last_name
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import Finding

CODE = "AGL401"
# Products whose cost grows faster than the gradient they read. A matrix-vector product (`mv`,
# `addmv`) reads its matrix once, the cost of an elementwise op on it, which the rule leaves alone
# (flag-gems' Outer: each gradient one `mv`, the cost of forward itself).
COSTLY_CALLS = frozenset(
    {"mm", "bmm", "matmul", "einsum", "linear", "addmm", "baddbmm", "addbmm",
     "tensordot", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
     "conv_transpose3d", "conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight",
     "conv3d_input", "conv3d_weight"}
)


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        if backward is None or model.inputs is None:
            continue
        if sum(1 for v in model.input_tensorness.values() if v is Tensorness.TENSOR) < 2:
            continue
        if model.provenance.gradient_inputs() <= 1:
            continue  # backward runs only when that one input needs its gradient: nothing to skip
        guards = GradGuards(model, backward)
        if _returns_early_on_guard(backward, guards):
            continue
        gradient_exprs = _per_input_gradient_expressions(backward)
        unguarded = _unguarded_costly_nodes(backward, model, guards)
        if any(id(node) in gradient_exprs for node in unguarded):
            yield module.at_def(
                CODE, model, backward,
                "backward computes a costly gradient (matrix product or convolution) without checking "
                "ctx.needs_input_grad: guard each input's gradient with `if ctx.needs_input_grad[i]:`",
            )


def _returns_early_on_guard(backward: Method, guards: GradGuards) -> bool:
    for statement in backward.node.body.body:
        if isinstance(statement, cst.If) and guards.asks(statement.test):
            if any(isinstance(n, cst.Return) for n in all_nodes(statement.body)):
                return True
    return False


def _unguarded_costly_nodes(backward: Method, model: FunctionModel, guards: GradGuards) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    def visit(node: cst.CSTNode, guarded: bool) -> None:
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and node is not backward.node:
            return
        if isinstance(node, (cst.If, cst.While, cst.IfExp)) and guards.asks(node.test):
            guarded = True
        if isinstance(node, cst.BooleanOperation) and guards.asks(node.left):
            guarded = True
        if not guarded and _is_costly(node, model):
            found.append(node)
        for child in code_children(node):
            visit(child, guarded)

    visit(backward.node.body, False)
    return found


def _is_costly(node: cst.CSTNode, model: FunctionModel) -> bool:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        return True
    if isinstance(node, cst.Call):
        name = dotted(node.func) or ""
        qualified = model.qualify(name) if name else ""
        return last_name(node.func) in COSTLY_CALLS or qualified.startswith("torch.nn.grad.")
    return False


def _per_input_gradient_expressions(backward: Method) -> set[int]:
    """ids of the nodes that compute one element of a returned gradient tuple: the element
    itself, or the value assigned to a name returned as one element. An intermediate shared by
    several gradients is not one input's gradient."""
    returned: set[str] = set()
    ids: set[int] = set()
    for ret in backward.returns:
        if isinstance(ret.value, cst.Tuple) and len(ret.value.elements) >= 2:
            for element in ret.value.elements:
                if isinstance(element.value, cst.Name):
                    returned.add(element.value.value)
                else:
                    ids |= {id(n) for n in all_nodes(element.value)}
    for node in backward.nodes:
        value: Optional[cst.CSTNode] = None
        if isinstance(node, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value in returned for t in node.targets
        ):
            value = node.value
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and isinstance(node.target, cst.Name) and (
            node.target.value in returned
        ):
            value = node.value
        if value is not None:
            ids |= {id(n) for n in all_nodes(value)}
    return ids
