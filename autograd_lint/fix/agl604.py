"""AGL604: ``torch.cuda.amp.custom_fwd`` -> ``torch.amp.custom_fwd(device_type="cuda")`` (unsafe).

``torch.cuda.amp.custom_fwd(fwd, cast_inputs=...)`` is, since torch 2.4, exactly
``torch.amp.custom_fwd(fwd, device_type="cuda", cast_inputs=...)`` plus a FutureWarning, and the
same for ``custom_bwd``: the rewrite keeps the decorator's arguments and adds the device type.
Unsafe because ``torch.amp.custom_fwd`` does not exist before torch 2.4: a project that still
supports an older torch would fail at import. The decorator is written in full
(``torch.amp.custom_fwd``), so only a module that imports ``torch`` itself gets the fix; the old
``from torch.cuda.amp import ...`` is left for the author to remove once nothing uses it.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from autograd_lint.findings import Finding
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    name = "custom_bwd" if "custom_bwd" in finding.message.split(" is deprecated")[0] else "custom_fwd"
    if not _imports_torch(context.tree):
        return None
    expressions = context.nodes_at(cst.BaseExpression, finding.line, finding.column)
    if not expressions:
        return None
    old = expressions[0]  # the outermost: the whole decorator expression
    arguments = list(old.args) if isinstance(old, cst.Call) else []
    if any(argument.keyword is not None and argument.keyword.value == "device_type" for argument in arguments):
        return None
    new = cst.parse_expression(f'torch.amp.{name}(device_type="cuda")')
    if arguments:
        first = new.args[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new = new.with_changes(args=[first, *arguments])
    return Fix("AGL604", safe=False, edits={old: new})


def _imports_torch(tree: Optional[ast.Module]) -> bool:
    """``import torch`` at module level, so that ``torch.amp`` is reachable by that name."""
    return tree is not None and any(
        isinstance(node, ast.Import) and any(alias.name == "torch" and alias.asname is None for alias in node.names)
        for node in tree.body
    )
