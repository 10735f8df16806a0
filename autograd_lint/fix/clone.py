"""AGL301 / AGL302: clone before the first in-place operation (safe).

``g = g.clone()`` (or ``x = x.clone()`` for a saved tensor) gives backward its own copy: the
values it computes are the same, and the caller's buffer is left alone. Offered only when the
written tensor is the gradient parameter (or a name unpacked once from ``ctx.saved_tensors``)
itself and backward makes no other name refer to it (``h = g`` or a view ``h = g[0]`` would keep
pointing at the original, so cloning would change what ``h`` sees).

Where: just before the first in-place write when that write is a statement of backward's own
body (it then runs before every later write); otherwise right where the name is bound (the top
of backward for a gradient parameter, after the unpacking for a saved tensor).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.flow import VIEW_METHODS, AliasTracker, InplaceWrite
from autograd_lint.analysis.syntax import all_nodes
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix, first_statement, insert_after, insert_before, parse_statement
from autograd_lint.findings import Finding
from autograd_lint.rules._inplace import grad_output_writes, saved_tensor_writes


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    model = context.model(finding)
    backward = model.own("backward") if model is not None else None
    if backward is None:
        return None
    writes = (grad_output_writes if finding.code == "AGL301" else saved_tensor_writes)(model, backward)
    write = next((w for w in writes if _starts_at(backward, w, finding)), None)
    if write is None or write.where or _root_name(write.written) != write.name:
        return None  # (a write inside a helper: the helper's own names, not backward's)
    name = write.name
    function = context.method_node(backward)
    if function is None or not isinstance(function.body, cst.IndentedBlock) or _aliased(backward, name):
        return None
    binding = _binding(model, backward, name, finding.code)
    if binding is None:
        return None
    clone = parse_statement(f"{name} = {name}.clone()", context.module)
    first = min((w for w in writes if w.name == name),
                key=lambda w: (backward.span(w.statement).line, backward.span(w.statement).column))
    line = context.parent(context.same_node(backward, first.statement))
    if isinstance(line, cst.SimpleStatementLine) and context.parent(line) is function.body:
        return Fix(finding.code, safe=True, edits={line: insert_before(line, [clone])})
    if binding == "parameter":
        top = first_statement(function.body)
        return Fix(finding.code, safe=True, edits={top: insert_before(top, [clone])})
    bound_line = context.parent(context.same_node(backward, binding))
    if isinstance(bound_line, cst.SimpleStatementLine) and context.parent(bound_line) is function.body:
        return Fix(finding.code, safe=True, edits={bound_line: insert_after(bound_line, [clone])})
    return None


def _starts_at(method: Method, write: InplaceWrite, finding: Finding) -> bool:
    span = method.span(write.statement)
    return (span.line, span.column) == (finding.line, finding.column)


def _root_name(node: cst.CSTNode) -> Optional[str]:
    """``g`` for ``g``, ``g[0]``, ``g.view(-1)``, ``g.data``; None for anything else."""
    while True:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Attribute) and node.attr.value in VIEW_METHODS:
            node = node.value
        elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
              and node.func.attr.value in VIEW_METHODS):
            node = node.func.value
        else:
            return None


def _aliased(method: Method, name: str) -> bool:
    """Some statement binds another name to ``name`` or a view of it (or captures it in a loop)."""
    tracker = AliasTracker({name})
    tracked = frozenset({name})
    for node in method.nodes:
        pairs = []
        if isinstance(node, cst.Assign):
            pairs = [(t.target, node.value) for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)) and node.value is not None:
            pairs = [(node.target, node.value)]
        elif isinstance(node, (cst.For, cst.CompFor)):
            pairs = [(node.target, node.iter)]
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            pairs = [(node.asname.name, node.item)]
        for target, value in pairs:
            if _binds_alias(tracker, target, value, tracked, name):
                return True
    return False


def _binds_alias(tracker: AliasTracker, target, value, tracked, name: str) -> bool:
    if isinstance(target, (cst.Tuple, cst.List)):
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements):
            return any(_binds_alias(tracker, t.value, v.value, tracked, name)
                       for t, v in zip(target.elements, value.elements))
        return any(isinstance(n, cst.Name) and n.value == name for n in all_nodes(value))
    if isinstance(target, cst.Name) and target.value == name:
        return False  # rebinding the name itself (`g = g * 2`) makes no alias
    if not isinstance(value, cst.BaseExpression):
        return False
    if tracker.tracked(value, tracked) is not None:
        return True
    # a container holding it (`gs = [g]`) or anything else we cannot follow
    return isinstance(value, (cst.Tuple, cst.List, cst.Dict, cst.Set, cst.Lambda)) and any(
        isinstance(n, cst.Name) and n.value == name for n in all_nodes(value))


def _binding(model: FunctionModel, backward: Method, name: str, code: str):
    """"parameter" for a gradient parameter; the statement that unpacks a saved tensor into
    ``name`` (the only read of ``ctx.saved_tensors`` in backward); else None."""
    if code == "AGL301":
        params = {p.name for p in backward.params[1:]}
        return "parameter" if name in params else None
    reads = [n for n in backward.nodes if model.is_saved_tensors(n, backward)]
    if len(reads) != 1:
        return None  # a second read would see the written tensor, the clone would change that
    bindings = [n for n in backward.nodes if isinstance(n, cst.Assign) and any(
        any(isinstance(x, cst.Name) and x.value == name for x in all_nodes(t.target)) for t in n.targets)]
    if len(bindings) != 1 or not any(n is reads[0] for n in all_nodes(bindings[0].value)):
        return None
    return bindings[0]
