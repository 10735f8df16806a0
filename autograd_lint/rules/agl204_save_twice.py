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
            if method.inherited or sum(1 for c in model.save_calls if c.method is method) < 2:
                continue  # one save per method cannot be two on a path: skip the path walk
            ctx_names = model.ctx_names(method)
            paths = enumerate_paths(method.node)
            if paths is None:
                continue
            saves_in: dict[int, list[cst.Call]] = {}  # path elements are shared between paths

            def saves(element) -> list[cst.Call]:
                if id(element) not in saves_in:
                    saves_in[id(element)] = [
                        node for node in all_nodes(element)
                        if isinstance(node, cst.Call) and is_ctx_attr(node.func, ctx_names, "save_for_backward")
                    ]
                return saves_in[id(element)]

            reported: set[int] = set()
            for path in paths:
                on_path = [call for element in path.elements for call in saves(element)]
                if len(on_path) >= 2 and id(on_path[1]) not in reported:
                    reported.add(id(on_path[1]))
                    yield module.at(
                        CODE, model, method, on_path[1],
                        "save_for_backward called a second time on this path: only the last call is "
                        "kept, the tensors of the first are silently dropped; save them in one call",
                    )
