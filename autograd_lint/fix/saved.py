"""What the AGL201 and AGL202 fixers share: seeing every use of ctx, and the saved-tensors unpacking.

Moving a value between a ctx attribute and ``save_for_backward`` changes how backward must read
it, so both fixers need to see *every* place that sets or reads it. They refuse a class that is
not closed: a Function base other than torch's (it may set or read the attribute), a subclass in
the file, or ctx used in any other way than ``ctx.<attribute>`` (handed to a helper, ``getattr``,
``vars(ctx)``, ``ctx.__dict__``): other code could then see the attribute.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from typing import Optional, Union

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.ctx_api import CTX_MEMBERS
from autograd_lint.analysis.syntax import all_nodes, dotted, is_ctx_attr
from autograd_lint.fix.context import FixContext


def closed_class(context: FixContext, model: FunctionModel) -> bool:
    """True when this file shows every read and write of the class's ctx attributes."""
    if model.bases or model.unknown_base or model.remote_bases or model.ctx_escapes:
        return False
    if any(method.inherited or _ctx_escapes(model, method) for method in model.methods.values()):
        return False
    return not _has_subclass(context, model.name)


def usable_attribute_name(name: str) -> bool:
    """A name that can be both a ctx attribute and a local of backward, and is not PyTorch's own."""
    return name.isidentifier() and not keyword.iskeyword(name) and name.strip("_") != "" and (
        name not in CTX_MEMBERS)


def ctx_attribute_nodes(model: FunctionModel, method: Method, attr: str) -> list[cst.Attribute]:
    """Every ``ctx.<attr>`` in ``method``, nested functions and lambdas included."""
    names = model.ctx_names(method)
    return [n for n in all_nodes(method.node.body) if is_ctx_attr(n, names, attr)]


def in_nested_scope(method: Method, node: cst.CSTNode) -> bool:
    return not any(n is node for n in method.nodes)


def saved_tensors_reads(model: FunctionModel, method: Method) -> list[cst.Attribute]:
    """Every ``ctx.saved_tensors`` in ``method``, nested scopes included."""
    return [n for n in all_nodes(method.node.body) if model.is_saved_tensors(n, method)]


@dataclass
class Unpacking:
    """``a, b = ctx.saved_tensors``: a top-level statement of backward, unpacking into plain names."""

    line: cst.SimpleStatementLine  # whole-file node
    assign: cst.Assign
    target: Union[cst.Tuple, cst.List]
    names: list[str]


def unpacking(context: FixContext, backward: Method, read: cst.Attribute) -> Optional[Unpacking]:
    """The unpacking ``read`` is the value of, when it is the plain kind; else None
    (``saved = ctx.saved_tensors``, ``ctx.saved_tensors[2]``, ``a, *rest = ...``, nested)."""
    function = context.method_node(backward)
    node = context.same_node(backward, read)
    assign = context.parent(node) if node is not None else None
    if function is None or not isinstance(assign, cst.Assign) or assign.value is not node or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or not target.elements:
        return None
    if not all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) and not e.value.lpar
               for e in target.elements):
        return None
    names = [e.value.value for e in target.elements]
    line = top_level_line(context, function, assign)
    if line is None or len(set(names)) != len(names):
        return None
    return Unpacking(line, assign, target, names)


def top_level_line(context: FixContext, function: cst.FunctionDef,
                   small: cst.BaseSmallStatement) -> Optional[cst.SimpleStatementLine]:
    """The line holding ``small`` alone, when it is a statement of ``function``'s own body."""
    line = context.parent(small)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if not isinstance(function.body, cst.IndentedBlock) or context.parent(line) is not function.body:
        return None
    return line


def statement_line(context: FixContext, small: cst.BaseSmallStatement) -> Optional[cst.SimpleStatementLine]:
    """The line holding ``small`` alone, in any block."""
    line = context.parent(small)
    return line if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None


def _ctx_escapes(model: FunctionModel, method: Method) -> bool:
    """ctx used other than as ``ctx.<attribute>`` (nested scopes included), or ``ctx.__dict__``."""
    names = model.ctx_names(method)
    if not names:
        return False
    uses = sum(1 for n in all_nodes(method.node.body) if isinstance(n, cst.Name) and n.value in names)
    attributes = [n for n in all_nodes(method.node.body) if is_ctx_attr(n, names)]
    return uses != len(attributes) or any(a.attr.value == "__dict__" for a in attributes)


def _has_subclass(context: FixContext, name: str) -> bool:
    subclassed = context.subclassed_names
    return subclassed is None or name in subclassed  # unparsable: cannot tell, so no fix


def bound_names(target: cst.CSTNode) -> list[cst.Name]:
    """The names an assignment target binds (``a``, ``a, (b, *c)``; not ``x.a`` nor ``x[a]``)."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in bound_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return bound_names(target.value)
    return []


def bindings(method: Method, name: str) -> list[cst.CSTNode]:
    """The nodes of ``method``'s own scope that (re)bind ``name``."""
    found = []
    for node in method.nodes:
        targets: list[cst.CSTNode] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor)):
            targets = [node.target]
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            targets = [node.asname.name]
        elif isinstance(node, cst.ExceptHandler) and node.name is not None:
            targets = [node.name.name]
        elif isinstance(node, cst.Del):
            targets = [node.target]
        elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
            targets = [a.asname.name if a.asname else a.name for a in node.names]
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            targets = [n.name for n in node.names]
        if any(dotted(n) == name for t in targets for n in bound_names(t)):
            found.append(node)
    return found
