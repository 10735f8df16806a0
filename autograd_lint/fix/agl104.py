"""AGL104: ``MyFn()(args)`` -> ``MyFn.apply(args)`` (safe).

Calling an instance raises in current PyTorch ("Legacy autograd function with non-static
forward method is deprecated"); ``.apply`` is the one supported way to run the Function. Only
the call-an-instance-at-once form is rewritten, and only when the instance takes no arguments
(``MyFn(3)(x)`` passed something to a legacy ``__init__``: there is no ``.apply`` equivalent).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix
from autograd_lint.findings import Finding


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    # The finding comes from the ast index: its column counts UTF-8 bytes.
    calls = context.nodes_at(cst.Call, finding.line, finding.column, byte_column=True)
    instance = next((c for c in calls if isinstance(c.func, cst.Name)), None)  # `MyFn()`, not `MyFn()(x)`
    if instance is None or instance.args:
        return None
    outer = context.parent(instance)
    if not isinstance(outer, cst.Call) or outer.func is not instance:
        return None
    apply = cst.Attribute(value=instance.func, attr=cst.Name("apply"),
                          lpar=instance.lpar, rpar=instance.rpar)
    return Fix("AGL104", safe=True, edits={outer: outer.with_changes(func=apply)})
