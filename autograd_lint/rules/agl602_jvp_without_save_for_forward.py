"""AGL602 jvp-without-save-for-forward: jvp reads ctx.saved_tensors that forward never filled
with ``ctx.save_for_forward``."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import is_ctx_attr
from autograd_lint.findings import Finding

CODE = "AGL602"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        jvp = model.own("jvp")
        if jvp is None or model.unknown_base or not model.forward_methods:
            continue
        if model.ctx_escapes or any(_calls_save_for_forward(model, method) for method in model.forward_methods):
            continue  # saved there, or maybe by a function the ctx is handed to
        for node in jvp.nodes_of(cst.Attribute):
            if model.is_saved_tensors(node, jvp):
                yield module.at(
                    CODE, model, jvp, node,
                    f"jvp reads ctx.{node.attr.value}, but forward never calls ctx.save_for_forward: under "
                    "forward-mode AD (torch.func.jvp, torch.autograd.forward_ad) it is empty, so "
                    "unpacking raises ValueError; save the tensors with ctx.save_for_forward too",
                )
                break  # one finding per jvp: the fix is one call in forward


def _calls_save_for_forward(model, method) -> bool:
    names = model.ctx_names(method)
    return any(is_ctx_attr(call.func, names, "save_for_forward") for call in method.nodes_of(cst.Call))
