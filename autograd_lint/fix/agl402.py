"""AGL402: give a tensor factory in backward the gradient's dtype and device (safe).

``torch.zeros/ones/empty/full(...)`` become ``grad.new_zeros/new_ones/new_empty/new_full(...)``
(same size arguments, the gradient's dtype and device). Floating factories (``rand``, ``randn``,
``eye``, ``linspace``, ``logspace``) get ``dtype=grad.dtype, device=grad.device``. Factories
whose dtype comes from their arguments (``arange``, ``tensor``, ``randint``, ``randperm``)
usually build indices: they get only ``device=grad.device``, so their dtype is kept.

``grad`` is backward's first gradient parameter; no fix when backward takes ``*grads``, rebinds
that parameter, or forward turns off ``materialize_grads`` (the gradient may then be None).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from autograd_lint.analysis.syntax import dotted, is_ctx_attr
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix, append_items
from autograd_lint.findings import Finding

_NEW_METHODS = {"zeros": "new_zeros", "ones": "new_ones", "empty": "new_empty", "full": "new_full"}
# Keywords the ``new_*`` methods accept as the factories do.
_NEW_KEYWORDS = frozenset({"requires_grad", "layout", "pin_memory"})
_FLOATING = frozenset({"rand", "randn", "eye", "linspace", "logspace"})
_DEVICE_ONLY = frozenset({"arange", "tensor", "randint", "randperm"})


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    model = context.model(finding)
    backward = model.own("backward") if model is not None else None
    if backward is None or backward.star_args is not None or len(backward.params) < 2:
        return None
    grad = backward.params[1].name
    if _rebinds(backward, grad) or _turns_off_materialize(model):
        return None
    call, factory = _factory_call(context, model, finding)
    if call is None:
        return None
    if factory in _NEW_METHODS:
        if any(a.keyword is not None and a.keyword.value not in _NEW_KEYWORDS for a in call.args):
            return None
        func = cst.Attribute(value=cst.Name(grad), attr=cst.Name(_NEW_METHODS[factory]))
        return Fix("AGL402", safe=True, edits={call: call.with_changes(func=func)})
    if factory in _FLOATING:
        added = [("dtype", f"{grad}.dtype"), ("device", f"{grad}.device")]
    elif factory in _DEVICE_ONLY:
        added = [("device", f"{grad}.device")]
    else:
        return None
    return Fix("AGL402", safe=True, edits={call: _with_keywords(call, added)})


def _factory_call(context: FixContext, model, finding: Finding):
    """The ``torch.<factory>(...)`` call the finding is at (not a call on its result)."""
    for call in context.nodes_at(cst.Call, finding.line, finding.column):
        name = dotted(call.func)
        head, _, factory = model.qualify(name).rpartition(".") if name else ("", "", "")
        if head == "torch":
            return call, factory
    return None, None


def _with_keywords(call: cst.Call, added: list[tuple[str, str]]) -> cst.Call:
    no_space = cst.SimpleWhitespace("")
    new_args = [cst.Arg(value=cst.parse_expression(value), keyword=cst.Name(key),
                        equal=cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space))
                for key, value in added]
    return call.with_changes(args=append_items(call.args, new_args))


def _rebinds(method, name: str) -> bool:
    for node in method.nodes:
        targets = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, (cst.For, cst.CompFor)):
            targets = [node.target]
        for target in targets:
            stack = [target]
            while stack:
                current = stack.pop()
                if isinstance(current, cst.Name) and current.value == name:
                    return True
                if isinstance(current, (cst.Tuple, cst.List)):
                    stack.extend(e.value for e in current.elements)
                elif isinstance(current, cst.StarredElement):
                    stack.append(current.value)
    return False


def _turns_off_materialize(model) -> bool:
    for method in model.methods.values():
        names = model.ctx_names(method)
        for node in method.nodes:
            if isinstance(node, cst.Call) and is_ctx_attr(node.func, names, "set_materialize_grads"):
                return True
    return False
