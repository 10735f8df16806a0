"""AGL604 deprecated-amp-decorator: ``torch.cuda.amp.custom_fwd`` / ``custom_bwd``, deprecated
for ``torch.amp.custom_fwd(device_type="cuda")``."""

from __future__ import annotations

from typing import Iterator

import ast

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import dotted
from autograd_lint.findings import Finding

CODE = "AGL604"
_DEPRECATED = {
    f"torch.cuda.amp{module}.{name}": name
    for module in ("", ".autocast_mode") for name in ("custom_fwd", "custom_bwd")
}


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for name in ("forward", "backward"):
            method = model.own(name)
            if method is None:
                continue
            for decorator in method.node.decorators:
                expression = decorator.decorator
                target = expression.func if isinstance(expression, cst.Call) else expression
                written = dotted(target)
                replaced = _DEPRECATED.get(model.qualify(written)) if written else None
                if replaced is not None and ("." in written or _bound_once(module, written)):
                    yield module.at(
                        CODE, model, method, decorator.decorator,
                        f"torch.cuda.amp.{replaced} is deprecated (a FutureWarning at import since "
                        f"torch 2.4, to be removed): use torch.amp.{replaced}(device_type=\"cuda\")",
                    )


def _bound_once(module: ModuleAnalysis, name: str) -> bool:
    """``name`` has no binding in the module but its import: the version-picking idiom binds it
    twice (``custom_fwd = torch.amp.custom_fwd(device_type="cuda")`` in ``try:``, the
    deprecated import in ``except ImportError:``), and then the deprecated one runs only on an
    old torch that has nothing else."""
    tree = module.index.tree
    if tree is None:
        return False
    bindings = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bindings += sum(1 for alias in node.names if (alias.asname or alias.name.split(".")[0]) == name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bindings += sum(1 for target in targets for leaf in ast.walk(target)
                            if isinstance(leaf, ast.Name) and leaf.id == name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            bindings += 1
    return bindings == 1
