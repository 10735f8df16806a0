"""AGL501: build the gradcheck inputs in double precision (safe).

``torch.randn(3, requires_grad=True)`` gets ``dtype=torch.double``; ``x.float()`` becomes
``x.double()``. The inputs are found as the rule finds them (``analysis.gradcheck_inputs``): in the gradcheck
call itself, or through the one assignment of a name in the same function. gradcheck's verdict
is then about the gradient, not float32 rounding. When the tensor is bound to a name that is
used again outside the gradcheck call, the other uses would get float64 too: unsafe.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from autograd_lint.analysis.gradcheck_inputs import is_factory, is_float32_factory, single_assignment
from autograd_lint.analysis.syntax import dotted
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix, append_items
from autograd_lint.findings import Finding


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    located = _gradcheck_in_ast(context, finding)
    if located is None:
        return None
    call, scope = located
    inputs = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "inputs"), None)
    if inputs is None:
        return None
    names_used_elsewhere = False
    if isinstance(inputs, ast.Name):
        inputs = single_assignment(scope, inputs.id, call) or inputs
    elements = inputs.elts if isinstance(inputs, (ast.Tuple, ast.List)) else [inputs]
    edits = {}
    for element in elements:
        if isinstance(element, ast.Name):
            name = element.id
            element = single_assignment(scope, name, call)
            if element is None:
                continue
            names_used_elsewhere |= _loads(scope, name) > 1
        if not is_float32_factory(element):
            continue
        fixed = _double(context, element)
        if fixed is None:
            return None
        edits.update(fixed)
    if not edits:
        return None
    return Fix("AGL501", safe=not names_used_elsewhere, edits=edits)


def _gradcheck_in_ast(context: FixContext, finding: Finding):
    """The ``ast`` gradcheck call at the finding, and its enclosing function (or the module)."""
    tree = context.tree  # the file's own (newer syntax included: analysis/newer_syntax.py)
    if tree is None:
        return None
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found = None
    for scope in scopes:
        for node in ast.walk(scope) if scope is not tree else _module_level(tree):
            if isinstance(node, ast.Call) and (node.lineno, node.col_offset + 1) == (finding.line, finding.column):
                found = (node, scope)  # later scopes are inner ones: the innermost wins
    return found


def _module_level(tree: ast.Module):
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _loads(scope: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load))


def _double(context: FixContext, node: ast.Call) -> Optional[dict]:
    """The edit that makes the float32 tensor built by ``node`` a float64 one."""
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "requires_grad_":
        return _double(context, func.value) if isinstance(func.value, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr == "float" and not node.args:
        name = context.node_at(cst.Name, func.end_lineno, func.end_col_offset - len("float") + 1, byte_column=True)
        return {name: name.with_changes(value="double")} if name is not None and name.value == "float" else None
    if not is_factory(node):
        return None
    call = next((c for c in context.nodes_at(cst.Call, node.lineno, node.col_offset + 1, byte_column=True)
                 if dotted(c.func) == ast.unparse(func)), None)
    if call is None:
        return None
    module_name = cst.parse_expression(f"{ast.unparse(func.value)}.double")  # `torch` or its alias
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dtype":  # dtype=torch.float32
            return {arg.value: module_name.with_changes(lpar=arg.value.lpar, rpar=arg.value.rpar)}
    keyword = cst.Arg(value=module_name, keyword=cst.Name("dtype"),
                      equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                            whitespace_after=cst.SimpleWhitespace("")))
    return {call: call.with_changes(args=append_items(call.args, [keyword]))}
