"""Facts about return values and method bodies that several rules share."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.dependence import certain_inputs
from autograd_lint.analysis.flow import enumerate_paths
# Re-exported: the rules import it from here.
from autograd_lint.analysis.non_differentiable import all_outputs_non_differentiable  # noqa: F401
from autograd_lint.analysis.syntax import is_none
from autograd_lint.analysis.tensorness import Tensorness, TensorJudge
from autograd_lint.analysis.tensorness import is_zero_gradient  # noqa: F401  (re-exported too)


def returned_values(value: Optional[cst.BaseExpression], judge: TensorJudge) -> Optional[list[Optional[cst.BaseExpression]]]:
    """The values a ``return`` gives PyTorch, one per gradient, or None when they cannot be counted.

    A tuple literal gives its elements; a bare ``return`` one ``None`` (listed as None); a list
    (``judge.is_list``: a display, ``[g] + [None] * 4``, a name only ever bound to lists: autograd
    takes it as one value), a constant or an expression that is certainly a tensor one value (a
    name only when it is certainly a tensor, like an untouched ``grad_output``). Other names,
    calls, subscripts and starred tuples cannot be counted (rules/AGL101.md, "When it stays
    silent").
    """
    if value is None or is_none(value):
        return [None]
    if isinstance(value, cst.Tuple):
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return [None if is_none(e.value) else e.value for e in value.elements]
    concatenated = tuple_concatenation(value)
    if concatenated is not None:
        return concatenated
    if isinstance(value, cst.IfExp):
        body, orelse = returned_values(value.body, judge), returned_values(value.orelse, judge)
        if body is not None and orelse is not None and len(body) == len(orelse):
            return body
        return None
    if judge.is_list(value) or isinstance(value, (cst.Integer, cst.Float, cst.SimpleString,
                                                  cst.UnaryOperation, cst.Comparison)):
        return [value]
    if isinstance(value, (cst.BinaryOperation, cst.Name)) and judge(value) is Tensorness.TENSOR:
        return [value]  # `grad_out * 2`, or a name that is certainly one tensor (not a tuple)
    return None


def tuple_concatenation(value: cst.BaseExpression) -> Optional[list[Optional[cst.BaseExpression]]]:
    """``(None, None) + (gx,)`` or ``(gx,) + (None,) * 3``: the values of a concatenation of tuple
    literals (repeated by an integer literal), one per gradient; None when any part cannot be
    counted (``(None, None) + ctx.grads``) or ``value`` is no concatenation."""
    if not isinstance(value, cst.BinaryOperation):
        return None
    if isinstance(value.operator, cst.Add):
        left, right = _tuple_part(value.left), _tuple_part(value.right)
        return left + right if left is not None and right is not None else None
    if isinstance(value.operator, cst.Multiply):
        return _tuple_part(value)
    return None


def _tuple_part(value: cst.BaseExpression) -> Optional[list[Optional[cst.BaseExpression]]]:
    if isinstance(value, cst.Tuple):
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return [None if is_none(e.value) else e.value for e in value.elements]
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        for part, times in ((value.left, value.right), (value.right, value.left)):
            if isinstance(part, cst.Tuple) and isinstance(times, cst.Integer):
                elements = _tuple_part(part)
                return elements * int(times.value) if elements is not None else None
        return None
    return tuple_concatenation(value)


def is_stub(method: Method) -> bool:
    """Body is only ``pass``, ``...``, a docstring and/or ``return``/``return None``."""
    for statement in method.node.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Expr) and isinstance(small.value, (cst.Ellipsis, cst.SimpleString, cst.ConcatenatedString)):
                continue
            if isinstance(small, cst.Return) and (small.value is None or is_none(small.value)):
                continue
            return False
    return True


def raises_only(method: Method) -> bool:
    """The body (after a docstring) ends in ``raise``: a deliberately unsupported method."""
    body = [s for s in method.node.body.body]
    last = body[-1] if body else None
    return isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Raise) for s in last.body)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def reachable_returns(method: Method) -> list[cst.Return]:
    """The method's returns that some path reaches (not one after an earlier return)."""
    paths = enumerate_paths(method.node)
    if paths is None:
        return method.returns
    reached = {id(p.ends_with) for p in paths}
    return [r for r in method.returns if id(r) in reached]


def reaches_output_through_arithmetic(model: FunctionModel, first: int) -> list[str]:
    """The inputs from position ``first`` on that forward's output certainly depends on through
    differentiable arithmetic (``analysis/dependence.py``, AGL308's facts): backward must give
    them a gradient, so neither the message nor the fix of a short return may offer ``None``.
    An input that is certainly not a tensor (``factor: float``), or an integer or boolean tensor,
    cannot require grad: None is its right gradient, and it is not listed."""
    inputs = model.inputs or []
    return [inputs[position].name for position in sorted(certain_inputs(model))
            if first <= position < len(inputs)
            and model.input_tensorness.get(inputs[position].name) is not Tensorness.NOT_TENSOR
            and not model.provenance.is_index_tensor(position)]
