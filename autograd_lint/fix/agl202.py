"""AGL202: keep a non-tensor as a ctx attribute instead of with ``save_for_backward`` (unsafe).

The flagged argument (the first one that is certainly not a tensor) leaves the call and becomes
``ctx.<name> = <expression>`` just before it; backward's unpacking ``a, name = ctx.saved_tensors``
loses that position and ``name = ctx.name`` follows it, so the rest of backward is untouched.
``<name>`` is the name backward unpacks it into (or the argument's own name when backward never
reads ``ctx.saved_tensors``). A call left with nothing to save is replaced by the assignment, and
an unpacking left with nothing to unpack by ``name = ctx.name``.

Unsafe: the call used to raise ``save_for_backward can only save variables`` when grad is
recorded; after the fix it runs (that is the point, but behaviour changes), and the expression is
now evaluated before the call's other arguments.

No fix when the class does not show every use of ctx (``saved.closed_class``), there is more
than one save call or it has ``*args``, backward reads ``ctx.saved_tensors`` in more than one
place or in any other way than a plain unpacking into distinct names (``ctx.saved_tensors[2]``,
``saved = ctx.saved_tensors``, ``a, *rest = ...``), the unpacking and the call disagree on the
count, or the name is already a ctx attribute somewhere (or one of PyTorch's own).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from autograd_lint.analysis.input_evidence import judge_parameter
from autograd_lint.analysis.syntax import has_star_arg, is_none
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.fix import saved
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix, insert_after, insert_before, parse_statement, without_element
from autograd_lint.findings import Finding
from autograd_lint.rules.agl202_save_non_tensor import input_named


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    model = context.model(finding)
    if model is None or len(model.save_calls) != 1 or not saved.closed_class(context, model):
        return None
    save = model.save_calls[0]
    method, backward = save.method, model.own("backward")
    span = method.span(save.call)
    if backward is None or save.args is None or (span.line, span.column) != (finding.line, finding.column):
        return None
    if any(a.keyword is not None for a in save.call.args) or has_star_arg(save.call):
        return None
    index = _flagged_index(model, save)
    call = context.same_node(method, save.call)
    expression = context.parent(call) if call is not None else None
    line = saved.statement_line(context, expression) if isinstance(expression, cst.Expr) else None
    if index is None or line is None:
        return None
    value = call.args[index].value
    value_code = context.module.code_for_node(value)
    if "\n" in value_code or "\r" in value_code:
        return None  # a line break inside a call's parentheses may not be legal outside them

    unpack = _unpacking(context, model, backward, len(save.args))
    if unpack is False:
        return None
    name = unpack.names[index] if unpack is not None else (value.value if isinstance(value, cst.Name) else None)
    if name is None or not _free_attribute(model, name):
        return None

    ctx = method.ctx_name
    attribute = parse_statement(f"{ctx}.{name} = {value_code}", context.module)
    if len(call.args) == 1:
        edits = {line: line.with_changes(body=attribute.body)}
    else:
        new_call = call.with_changes(args=_without_arg(call.args, index))
        edits = {line: insert_before(line.with_changes(body=[expression.with_changes(value=new_call)]), [attribute])}
    if unpack is not None:
        edits.update(_backward_edits(context, backward, unpack, index, name))
    function = context.method_node(method)
    if function is None:
        return None
    # One fix per class and round (see agl201): they all rewrite the same save call.
    return Fix("AGL202", safe=False, edits={function.name: function.name, **edits})


def _flagged_index(model, save) -> Optional[int]:
    """The argument AGL202 reports: the first that is certainly not a tensor (as the rule judges)."""
    inputs = {p.name: p for p in model.inputs or []}
    judge = model.judge(save.method)
    for index, value in enumerate(save.args):
        if is_none(value):
            continue
        param = input_named(model, save.method, value, inputs)
        if param is not None:
            verdict = judge_parameter(param.name, param.annotation, param.default, model.input_uses[param.name],
                                      is_first=False, by_name=False, passed=model.passed_literals(param.name))
        else:
            verdict = judge(value)
        if verdict is Tensorness.NOT_TENSOR:
            return index
    return None


def _unpacking(context: FixContext, model, backward, count: int):
    """backward's unpacking of the saved tensors; None when it never reads them; False when it
    reads them in a way the fix cannot follow."""
    reads = saved.saved_tensors_reads(model, backward)
    if not reads:
        return None
    if len(reads) != 1:
        return False
    found = saved.unpacking(context, backward, reads[0])
    return found if found is not None and len(found.names) == count else False


def _free_attribute(model, name: str) -> bool:
    """``name`` is not yet a ctx attribute: nothing sets it, nothing reads it."""
    known = model.ctx_attributes_set
    if known is None or name in known or not saved.usable_attribute_name(name):
        return False
    return not any(saved.ctx_attribute_nodes(model, m, name) for m in model.methods.values())


def _without_arg(args, index: int) -> list[cst.Arg]:
    result = without_element(args, index)
    if index == len(result):  # the last went: the space before `)` it held stays
        result[-1] = result[-1].with_changes(whitespace_after_arg=args[index].whitespace_after_arg)
    return result


def _backward_edits(context: FixContext, backward, unpack: saved.Unpacking, index: int, name: str) -> dict:
    """The position goes from the unpacking; ``name = ctx.name`` right after it keeps the local."""
    restore = parse_statement(f"{name} = {backward.ctx_name}.{name}", context.module)
    if len(unpack.names) == 1:
        return {unpack.line: unpack.line.with_changes(body=restore.body)}
    elements = without_element(unpack.target.elements, index)
    if len(elements) == 1 and isinstance(unpack.target, cst.Tuple) and not isinstance(elements[0].comma, cst.Comma):
        elements[0] = elements[0].with_changes(comma=cst.Comma())  # `a, = ...`: still unpacks
    target = unpack.target.with_changes(elements=elements)
    assign = unpack.assign.with_changes(targets=[unpack.assign.targets[0].with_changes(target=target)])
    return {unpack.line: insert_after(unpack.line.with_changes(body=[assign]), [restore])}
