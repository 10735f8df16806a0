"""AGL101: append ``None`` gradients for the inputs backward forgot (safe or unsafe).

PyTorch wants one value per forward input and accepts extra trailing ``None``s, so a return
that is short of values only at the end gets ``None`` for each missing input. Safe when every
missing input is certainly not a tensor (a number, flag or module: its gradient must be None
anyway); unsafe when one may be a tensor (it then gets no gradient). No fix when a missing input
is certainly a tensor (None would hide a forgotten gradient) or reaches forward's output
through differentiable arithmetic (``x * w + b``: a None for ``b`` turns the crash into a bias
that never trains, AGL308's harm), when a returned value sits at an
input that is certainly not a tensor (the values may be misaligned), or when the return is not
a plain tuple or single value (a list, by display or by name, a conditional, a starred tuple).

A list is one value to autograd (docs/runtime-mechanisms.md, F1): ``return [gx, gw]`` with one
value per input becomes ``return (gx, gw)`` (safe: the list raises on every backward, the tuple
hands autograd the values the author listed); any other list return gets no fix.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from autograd_lint.analysis.input_evidence import judge_parameter
from autograd_lint.analysis.syntax import is_none
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix, append_items, comma
from autograd_lint.findings import Finding
from autograd_lint.rules._common import (
    reachable_returns,
    reaches_output_through_arithmetic,
    returned_values,
    tuple_concatenation,
)


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    model = context.model(finding)
    backward = model.own("backward") if model is not None else None
    if backward is None or model.inputs is None:
        return None
    ret = next((r for r in reachable_returns(backward)
                if (backward.span(r).line, backward.span(r).column) == (finding.line, finding.column)), None)
    if ret is None or isinstance(ret.value, cst.IfExp) or tuple_concatenation(ret.value) is not None:
        return None  # (a concatenation would need its own rewrite)
    judge = model.judge(backward)
    if ret.value is not None and judge.is_list(ret.value):
        # One value to autograd however many it holds: Nones after it would not help.
        return _list_as_tuple(context, model, backward, ret, judge)
    values = returned_values(ret.value, judge)
    inputs = model.inputs
    if values is None or not 0 < len(values) < len(inputs):
        return None
    tensorness = [model.input_tensorness.get(p.name, Tensorness.UNKNOWN) for p in inputs]
    if any(value is not None and tensorness[i] is Tensorness.NOT_TENSOR for i, value in enumerate(values)):
        return None
    missing = tensorness[len(values):]
    if Tensorness.TENSOR in missing:
        return None
    if reaches_output_through_arithmetic(model, len(values)):
        return None  # None there is AGL308's harm: the crash becomes a gradient silently dropped
    # Safe only on what the annotation, default or use says, not on the parameter's name.
    certain = [_without_name_evidence(model, p) for p in inputs[len(values):]]
    node = context.same_node(backward, ret)
    if node is None:
        return None
    new_value = _with_nones(node.value, len(missing))
    return Fix("AGL101", safe=all(t is Tensorness.NOT_TENSOR for t in certain),
               edits={node: node.with_changes(value=new_value, whitespace_after_return=cst.SimpleWhitespace(" "))})


def _list_as_tuple(context: FixContext, model, backward, ret: cst.Return, judge) -> Optional[Fix]:
    """``return [gx, gw]`` -> ``return (gx, gw)``: safe only for a list display with one value
    per input (forward's inputs all counted: new style, or legacy without defaults), no starred
    or list element, and no gradient at an input that is certainly not a tensor. The return
    raises on every backward as it is; the tuple gives autograd the very values the author
    listed. A list built up or by name, or a count that does not match, gets no fix: which value
    belongs to which input is then not certain."""
    value, inputs = ret.value, model.inputs
    legacy_defaults = model.style != "new" and any(p.has_default for p in inputs)  # the call may leave one out
    if not isinstance(value, cst.List) or value.lpar or legacy_defaults:
        return None
    elements = value.elements
    if len(elements) != len(inputs) or any(
            isinstance(e, cst.StarredElement) or judge.is_list(e.value) for e in elements):
        return None
    for element, param in zip(elements, inputs):
        if not is_none(element.value) and model.input_tensorness.get(param.name) is Tensorness.NOT_TENSOR:
            return None
    node = context.same_node(backward, ret)
    if node is None or not isinstance(node.value, cst.List):
        return None
    listed = node.value
    items = list(listed.elements)
    if len(items) == 1 and not isinstance(items[0].comma, cst.Comma):
        items[0] = items[0].with_changes(comma=cst.Comma())  # `(g,)`: `(g)` is no tuple
    as_tuple = cst.Tuple(items, lpar=[cst.LeftParen(whitespace_after=listed.lbracket.whitespace_after)],
                         rpar=[cst.RightParen(whitespace_before=listed.rbracket.whitespace_before)])
    return Fix("AGL101", safe=True, edits={node: node.with_changes(value=as_tuple)})


def _with_nones(value: Optional[cst.BaseExpression], count: int) -> cst.BaseExpression:
    nones = [cst.Element(cst.Name("None")) for _ in range(count)]
    if value is None or (is_none(value) and not value.lpar):  # `return` / `return None`
        return cst.Tuple(_separated([cst.Element(cst.Name("None")), *nones]), lpar=[], rpar=[])
    if not isinstance(value, cst.Tuple):
        return cst.Tuple([cst.Element(value, comma=comma()), *_separated(nones)], lpar=[], rpar=[])
    elements = list(value.elements)
    closing = value.rpar[0].whitespace_before if value.rpar else None
    if (len(elements) >= 2 and isinstance(closing, cst.ParenthesizedWhitespace)
            and isinstance(elements[-1].comma, cst.Comma) and isinstance(elements[-2].comma, cst.Comma)
            and isinstance(elements[-2].comma.whitespace_after, cst.ParenthesizedWhitespace)):
        # One value per line with a trailing comma: what ends the last line (its comment) is
        # held by the closing parenthesis; it stays with the value it was written after.
        separator = elements[-2].comma
        elements[-1] = elements[-1].with_changes(comma=separator.with_changes(
            whitespace_after=closing.with_changes(last_line=separator.whitespace_after.last_line)))
        added = [e.with_changes(comma=separator) for e in nones[:-1]] + [nones[-1].with_changes(
            comma=value.elements[-1].comma)]
        rpar = value.rpar[0].with_changes(whitespace_before=closing.with_changes(
            first_line=separator.whitespace_after.first_line, empty_lines=[]))
        return value.with_changes(elements=[*elements, *added], rpar=[rpar, *value.rpar[1:]])
    return value.with_changes(elements=append_items(value.elements, nones))


def _separated(elements: list[cst.Element]) -> list[cst.Element]:
    return [e.with_changes(comma=comma()) for e in elements[:-1]] + elements[-1:]


def _without_name_evidence(model, param) -> Tensorness:
    return judge_parameter(param.name, param.annotation, param.default, model.input_uses[param.name],
                           is_first=False, by_name=False, passed=model.passed_literals(param.name))
