"""AGL204 save-twice: save_for_backward called more than once on one path (only the last call is kept)."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.flow import enumerate_paths
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import all_nodes, is_ctx_attr
from autograd_lint.findings import Finding

CODE = "AGL204"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for method in model.forward_methods:
            if method.inherited:
                continue
            ctx_names = model.ctx_names(method)
            paths = enumerate_paths(method.node)
            if paths is None:
                continue
            reported: set[int] = set()
            for path in paths:
                saves = [
                    node
                    for element in path.elements
                    for node in all_nodes(element)
                    if isinstance(node, cst.Call) and is_ctx_attr(node.func, ctx_names, "save_for_backward")
                ]
                if len(saves) >= 2 and id(saves[1]) not in reported:
                    reported.add(id(saves[1]))
                    yield module.at(
                        CODE, model, method, saves[1],
                        "save_for_backward called a second time on this path: only the last call is "
                        "kept, the tensors of the first are silently dropped; save them in one call",
                    )
