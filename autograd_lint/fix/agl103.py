"""AGL103: add ``@staticmethod`` (safe).

``Function.apply`` calls the method on the class with ctx first, so a plain function and a
static method receive the same arguments: nothing changes at runtime except that readers,
type checkers and torch.compile see what PyTorch documents.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix
from autograd_lint.findings import Finding

# Decorators that do not return a plain function; staticmethod on top of them would be a change.
_NOT_FUNCTIONS = frozenset({"property", "cached_property", "classmethod", "staticmethod"})


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    model = context.model(finding)
    method = model.own(finding.method) if model is not None and finding.method else None
    if method is None or _NOT_FUNCTIONS & set(method.decorators):
        return None
    if model.instance_state:
        return None  # a class written for instances needs its state moved into .apply's arguments
    node = context.method_node(method)
    if node is None:
        return None
    decorator = cst.Decorator(decorator=cst.Name("staticmethod"))
    # First in the list = outermost: staticmethod must wrap whatever the others return.
    return Fix("AGL103", safe=True, edits={node: node.with_changes(decorators=[decorator, *node.decorators])})
