"""AGL304: ``x.data`` -> ``x.detach()`` where the value is only read (unsafe); in ``backward``,
``x.data`` -> ``x``.

``.data`` and ``detach()`` give the same values without autograd history. They differ in one
thing, which is the point of the rule: ``detach()`` shares the tensor's version counter. In
``backward`` the harm is the lost history itself (double backward silently drops this
Function's term), which ``detach()`` would keep losing: there the fix keeps ``x``, whose
history ``backward`` needs under ``create_graph=True`` and which costs nothing otherwise
(autograd runs ``backward`` without building a graph unless asked). Code that later changes the
result in place (through another name) then makes autograd raise where ``.data`` silently gave
wrong gradients, so the fix can turn a silent bug into an error: unsafe. Writes through
``.data`` (``x.data = y``, ``x.data[i] = v``, ``x.data.copy_(y)``) get no fix: what replaces one
(``torch.no_grad()``, ``ctx.mark_dirty``) depends on why the code wrote past autograd. All the
flagged reads on the finding's line are rewritten (the rule reports a line once).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix
from autograd_lint.findings import Finding
from autograd_lint.rules.agl304_dot_data import flagged_reads


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    model = context.model(finding)
    method = model.own(finding.method) if model is not None and finding.method else None
    if method is None:
        return None
    edits = {}
    for node in flagged_reads(model, method):  # never a write, nor a read the rule leaves alone
        if method.span(node).line != finding.line:
            continue
        whole = context.same_node(method, node)
        if whole is None or any(_inside(context, whole, other) for other in edits):
            continue
        edits[whole] = _replacement(whole, in_backward=method.name == "backward")
    return Fix("AGL304", safe=False, edits=edits) if edits else None


def _replacement(data: cst.Attribute, in_backward: bool) -> cst.BaseExpression:
    if in_backward:  # `(x.data)` -> `(x)`: an attribute's value is an atom, valid on its own
        value = data.value
        return value.with_changes(lpar=[*data.lpar, *value.lpar], rpar=[*value.rpar, *data.rpar])
    return cst.Call(func=data.with_changes(attr=cst.Name("detach"), lpar=[], rpar=[]), lpar=data.lpar, rpar=data.rpar)


def _inside(context: FixContext, node: cst.CSTNode, other: cst.CSTNode) -> bool:
    a, b = context.span(node), context.span(other)
    return a[:2] <= b[:2] and b[2:] <= a[2:] or b[:2] <= a[:2] and a[2:] <= b[2:]
