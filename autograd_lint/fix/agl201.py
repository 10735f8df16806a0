"""AGL201 and AGL207: keep a tensor with ``save_for_backward`` instead of as a ctx attribute (unsafe).

``ctx.x = x`` becomes ``ctx.save_for_backward(x)`` (or ``x`` is appended to the one
``save_for_backward(...)`` call already there, and the assignment goes), and backward reads the
tensor from ``ctx.saved_tensors``: its unpacking ``a, = ctx.saved_tensors`` gets the new name at
the same position as the save call, or a ``x, = ctx.saved_tensors`` line opens backward; every
``ctx.x`` in backward becomes ``x``. Unsafe: PyTorch now checks the tensor for in-place changes
made after forward (code that did so now raises) and frees it after backward.

Offered only for a single top-level statement ``ctx.<attr> = <name>`` in forward or
setup_context, in a class whose every use of ctx is visible (``saved.closed_class``), where the
attribute is set once and read only in backward's own scope (after the unpacking, if there is
one), the new local name is unused in backward, ``ctx.saved_tensors`` is read at most once (a
plain unpacking into names), and there is at most one save call (top-level, in the same method,
no ``*args``). When merging, the saved name must not be rebound after either statement starts,
so the call saves the same value the attribute held.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.syntax import has_star_arg, names_read
from autograd_lint.fix import saved
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import (
    Fix,
    append_items,
    comment_lines,
    first_statement,
    parse_statement,
    with_edits_inside,
)
from autograd_lint.findings import Finding


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    model = context.model(finding)
    method = model.own(finding.method) if model is not None and finding.method else None
    backward = model.own("backward") if model is not None else None
    if method is None or backward is None or not saved.closed_class(context, model):
        return None
    attr_set = next((s for s in model.ctx_attribute_sets  # a container's element has no fix
                     if s.method is method and s.index is None and _starts_at(method, s.statement, finding)), None)
    if attr_set is None or not isinstance(attr_set.statement, cst.Assign) or not isinstance(attr_set.value, cst.Name):
        return None
    if model.provenance.is_saved(method, attr_set.value):
        return None  # already saved (forward's output, reported for its cycle): saving it twice is no fix
    attr, value = attr_set.attr, attr_set.value.value
    if len(attr_set.statement.targets) != 1 or not saved.usable_attribute_name(attr):
        return None
    function, back_function = context.method_node(method), context.method_node(backward)
    assign = context.same_node(method, attr_set.statement)
    line = saved.top_level_line(context, function, assign) if function is not None and assign is not None else None
    if line is None or back_function is None or not isinstance(back_function.body, cst.IndentedBlock):
        return None
    reads = _reads_in_backward(model, method, backward, attr_set.statement, attr)
    if reads is None or attr in names_read(back_function):
        return None

    edits = _save_edits(context, model, method, function, line, value)
    if edits is None:
        return None
    back_edits = _backward_edits(context, model, backward, back_function, attr, reads)
    if back_edits is None:
        return None
    # Claiming forward's name serialises the fixes of one class: two of them in one round would
    # each add a save call of their own, and the second would replace what the first saves.
    claim = {function.name: function.name}
    return Fix(finding.code, safe=False, edits={**claim, **edits, **back_edits})


def _starts_at(method: Method, node: cst.CSTNode, finding: Finding) -> bool:
    span = method.span(node)
    return (span.line, span.column) == (finding.line, finding.column)


def _reads_in_backward(model: FunctionModel, method: Method, backward: Method, statement: cst.Assign,
                       attr: str) -> Optional[list[cst.Attribute]]:
    """backward's reads of ``ctx.<attr>``; None when the attribute is used anywhere else (set
    twice, read in forward, setup_context, jvp or vjp, read in a nested function, written in
    backward)."""
    target = statement.targets[0].target
    for other in model.methods.values():
        if other is backward:
            continue
        if any(n is not target for n in saved.ctx_attribute_nodes(model, other, attr)):
            return None
    reads = saved.ctx_attribute_nodes(model, backward, attr)
    written = {id(n) for node in backward.nodes if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del))
               for n in _targets(node)}
    if any(id(n) in written or saved.in_nested_scope(backward, n) for n in reads):
        return None
    return reads


def _targets(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    return [node.target]


def _save_edits(context: FixContext, model: FunctionModel, method: Method, function: cst.FunctionDef,
                line: cst.SimpleStatementLine, value: str) -> Optional[dict]:
    """The forward side: a new save call in place of the assignment, or the name appended to the
    one that is there (and the assignment removed, its comments kept on the next line)."""
    calls = model.save_calls
    if not calls:
        ctx = method.ctx_name
        call = parse_statement(f"{ctx}.save_for_backward({value})", context.module).body[0]
        return {line: line.with_changes(body=[call])}
    if len(calls) != 1 or calls[0].method is not method or has_star_arg(calls[0].call):
        return None
    save = context.same_node(method, calls[0].call)
    expression = context.parent(save) if save is not None else None
    save_line = saved.top_level_line(context, function, expression) if isinstance(expression, cst.Expr) else None
    if save_line is None or _rebound_after(context, method, value, min(context.start(line), context.start(save_line))):
        return None
    new_call = save.with_changes(args=append_items(save.args, [cst.Arg(cst.Name(value))]))
    new_save_line = save_line.with_changes(body=[expression.with_changes(value=new_call)])
    statements = list(function.body.body)
    following = statements[statements.index(line) + 1] if statements[-1] is not line else None
    kept = comment_lines(line)
    if following is None:
        if any(e.comment is not None for e in kept):
            return None  # nowhere to keep the comments
        return {line: cst.RemovalSentinel.REMOVE, save_line: new_save_line}
    edits = {line: cst.RemovalSentinel.REMOVE, save_line: new_save_line}
    replaced = edits.get(following, following)
    edits[following] = replaced.with_changes(leading_lines=[*kept, *replaced.leading_lines])
    return edits


def _rebound_after(context: FixContext, method: Method, name: str, start: tuple[int, int]) -> bool:
    for node in saved.bindings(method, name):
        span = method.span(node)
        if (span.line, span.column) >= start:
            return True
    return False


def _backward_edits(context: FixContext, model: FunctionModel, backward: Method, function: cst.FunctionDef,
                    attr: str, reads: list[cst.Attribute]) -> Optional[dict]:
    """``ctx.<attr>`` -> ``<attr>``, bound by the saved-tensors unpacking (extended or new)."""
    edits = {}
    for read in reads:
        node = context.same_node(backward, read)
        if node is None:
            return None
        edits[node] = cst.Name(attr, lpar=node.lpar, rpar=node.rpar)
    saved_reads = saved.saved_tensors_reads(model, backward)
    save_count = len(model.save_calls[0].args) if model.save_calls else 0
    if not saved_reads:
        if not reads:
            return edits  # backward never reads it: nothing to unpack
        if save_count:
            return None  # it would have to unpack the other saved tensors as well
        top = first_statement(function.body)
        new_line = parse_statement(f"{attr}, = {backward.ctx_name}.saved_tensors", context.module)
        top_edited, used = with_edits_inside(top, edits)
        edits = {n: r for n, r in edits.items() if n not in used}
        edits[top] = cst.FlattenSentinel([new_line.with_changes(leading_lines=top.leading_lines),
                                          top_edited.with_changes(leading_lines=())])
        return edits
    if len(saved_reads) != 1:
        return None
    found = saved.unpacking(context, backward, saved_reads[0])
    if found is None or len(found.names) != save_count:
        return None
    end = context.span(found.line)[2:]
    if any(context.span(n)[:2] < end for n in edits):
        return None  # read before the unpacking binds the name
    elements = append_items(found.target.elements, [cst.Element(cst.Name(attr))])
    target = found.target.with_changes(elements=elements)
    assign = found.assign.with_changes(targets=[found.assign.targets[0].with_changes(target=target)])
    edits[found.line] = found.line.with_changes(body=[assign])
    return edits
