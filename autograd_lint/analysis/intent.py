"""What the author wrote into a Function that says what it is for, where the code says it.

- ``only_raises(method)``: the body, after a docstring, is a single ``raise``: a method written
  to refuse (``def backward(ctx, g): raise NotImplementedError``). It never computes anything,
  so how it is declared (static or not) changes nothing anyone can observe but the message.
- ``inference_only_marker(model)``: forward runs under ``torch.no_grad()``
  or ``torch.inference_mode()``, as a decorator or as a ``with`` around every return. Inside
  ``Function.apply`` forward already runs without grad, so the marker changes nothing at
  runtime: it is the author saying the Function is for inference. A caller that differentiates
  through it would still reach a missing backward, so this is intent, not a proof (compare
  ``non_differentiable.all_outputs_non_differentiable``, which is one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from autograd_lint.analysis.syntax import dotted

if TYPE_CHECKING:
    from autograd_lint.analysis.class_model import FunctionModel, Method

# What torch calls the context managers and decorators that turn gradient recording off.
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                      "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
                      "torch.autograd.inference_mode"})


def only_raises(method: "Method") -> bool:
    """The body is a docstring (optional) and one ``raise`` statement."""
    statements = [small for line in method.node.body.body
                  for small in (line.body if isinstance(line, cst.SimpleStatementLine) else [line])]
    if statements and isinstance(statements[0], cst.Expr) and isinstance(
            statements[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        statements = statements[1:]
    return len(statements) == 1 and isinstance(statements[0], cst.Raise)


def inference_only_marker(model: "FunctionModel") -> Optional[str]:
    """How forward says it runs without gradients (``@torch.no_grad()`` on forward, ``with
    torch.inference_mode():`` around every return); None when it does not. Not a decorator on
    the class: ``@torch.no_grad()`` turns a class into a function (checked on torch 2.13), which
    has no ``.apply`` at all."""
    forward = model.forward
    if forward is None:
        return None
    for decorator in forward.node.decorators:
        written = _no_grad_call(decorator.decorator, model)
        if written is not None:
            return f"@{written}"
    if not forward.returns:
        return None
    markers = {_enclosing_no_grad(forward, ret, model) for ret in forward.returns}
    if len(markers) == 1 and None not in markers:
        return f"with {markers.pop()}"
    return None


def _no_grad_call(expression: cst.BaseExpression, model: "FunctionModel") -> Optional[str]:
    """``torch.no_grad()`` / ``torch.inference_mode()`` (or their bare decorator form) as written;
    ``torch.inference_mode(False)`` turns nothing off."""
    call = expression if isinstance(expression, cst.Call) else None
    target = call.func if call is not None else expression
    written = dotted(target)
    if written is None or model.qualify(written) not in _NO_GRAD:
        return None
    if call is not None and call.args and not _is_true(call.args[0].value):
        return None
    return f"{written}()"


def _is_true(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "True"


def _enclosing_no_grad(method: "Method", node: cst.CSTNode, model: "FunctionModel") -> Optional[str]:
    """The no-grad context manager of a ``with`` around ``node``, if any."""
    parents = method.parents
    parent = parents.get(id(node))
    while parent is not None:
        if isinstance(parent, cst.With):
            for item in parent.items:
                written = _no_grad_call(item.item, model)
                if written is not None:
                    return written
        parent = parents.get(id(parent))
    return None
