"""AGL306 undefined-grad-arithmetic: with ``ctx.set_materialize_grads(False)``, backward computes
with a gradient parameter that it never checks for None."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import is_ctx_attr, positional_args
from autograd_lint.findings import Finding

CODE = "AGL306"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        grads = model.grad_params
        # One gradient parameter: backward runs only when some output's gradient is defined,
        # so a lone gradient is never None.
        if backward is None or grads is None or len(grads) < 2 or not _materialize_off(model):
            continue
        checked = _checked_names(backward)
        for param in grads:
            if param.name in checked:
                continue
            use = _first_arithmetic(backward, param.name)
            if use is not None:
                yield module.at(
                    CODE, model, backward, use,
                    f"forward calls ctx.set_materialize_grads(False), so {param.name} is None whenever "
                    f"its output does not reach the loss, and this raises TypeError then; test "
                    f"`{param.name} is None` first (and return None for the inputs it feeds)",
                )


def _materialize_off(model) -> bool:
    """forward or setup_context calls ``ctx.set_materialize_grads(False)`` (a literal False)."""
    for method in model.forward_methods:
        names = model.ctx_names(method)
        for call in method.nodes_of(cst.Call):
            if is_ctx_attr(call.func, names, "set_materialize_grads"):
                args = positional_args(call)
                if len(args) == 1 and isinstance(args[0].value, cst.Name) and args[0].value.value == "False":
                    return True
    return False


def _checked_names(method) -> set[str]:
    """Names backward tests in any way that can tell None apart: ``g is None``, ``g == None``,
    ``if g:``, ``g or ...``, ``isinstance(g, ...)``, ``g is not None and ...``."""
    checked: set[str] = set()
    for node in method.nodes_of(cst.Comparison, cst.If, cst.IfExp, cst.BooleanOperation, cst.UnaryOperation,
                                cst.Call, cst.While, cst.Assert):
        if isinstance(node, cst.Comparison):
            checked |= {n.value for n in [node.left, *(c.comparator for c in node.comparisons)]
                        if isinstance(n, cst.Name)}
        elif isinstance(node, (cst.If, cst.IfExp, cst.While, cst.Assert)):
            if isinstance(node.test, cst.Name):
                checked.add(node.test.value)
        elif isinstance(node, cst.BooleanOperation):
            checked |= {n.value for n in (node.left, node.right) if isinstance(n, cst.Name)}
        elif isinstance(node, cst.UnaryOperation):
            if isinstance(node.expression, cst.Name) and isinstance(node.operator, cst.Not):
                checked.add(node.expression.value)
        elif isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "id", "type"):
            checked |= {a.value.value for a in node.args if isinstance(a.value, cst.Name)}
    return checked


def _first_arithmetic(method, name: str) -> Optional[cst.CSTNode]:
    """The first place backward computes with ``name`` as a tensor: an operand of an arithmetic
    operator, or the receiver of a method call (``g.sum()``)."""
    found = []
    for node in method.nodes_of(cst.BinaryOperation, cst.Call):
        if isinstance(node, cst.BinaryOperation):
            if any(isinstance(side, cst.Name) and side.value == name for side in (node.left, node.right)):
                found.append(node)
        elif (isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
              and node.func.value.value == name):
            found.append(node)
    if not found or _rebound(method, name):
        return None
    return found[0]


def _rebound(method, name: str) -> bool:
    """``name`` assigned in backward (``g = g.contiguous() if g is not None else ...`` aside, a
    rebinding may give it a value): then we cannot say it is still the gradient."""
    for node in method.nodes_of(cst.AssignTarget, cst.AugAssign, cst.AnnAssign):
        target = node.target
        if isinstance(target, cst.Name) and target.value == name:
            return True
    return False
