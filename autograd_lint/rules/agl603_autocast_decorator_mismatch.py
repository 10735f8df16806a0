"""AGL603 autocast-decorator-mismatch: ``@custom_fwd`` on forward without ``@custom_bwd`` on
backward, or the reverse."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.class_model import Method
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import call_keyword, dotted
from autograd_lint.findings import Finding

CODE = "AGL603"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        forward, backward = model.forward, model.backward
        if forward is None or backward is None or (forward.inherited and backward.inherited):
            continue
        forward_cast = any(name.endswith("custom_fwd") for name in forward.decorators)
        backward_cast = any(name.endswith("custom_bwd") for name in backward.decorators)
        if forward_cast and not backward_cast and not backward.inherited and not _disables_autocast(backward):
            yield module.at(
                CODE, model, backward, backward.node.name,
                "forward has @custom_fwd but backward has no @custom_bwd: backward runs under the "
                "autocast state of the backward call, not forward's, so its dtypes differ from "
                "forward's (a dtype mismatch error, or gradients in another precision); add @custom_bwd",
                severity="warning",
            )
        elif backward_cast and not forward_cast and not forward.inherited and not model.ctx_escapes:
            # (ctx handed to other code, as `TiledMLP.forward(ctx, ...)` under its own
            # @custom_fwd: that code may record the autocast state on this ctx)
            yield module.at(
                CODE, model, forward, forward.node.name,
                "backward has @custom_bwd but forward has no @custom_fwd: backward raises AttributeError "
                "('_fwd_used_autocast') on every call, since @custom_bwd replays the autocast state that "
                "only @custom_fwd records; add @custom_fwd to forward",
                severity="error",
            )


def _disables_autocast(backward: Method) -> bool:
    """backward computes under a ``with`` that turns autocast off itself
    (``torch.autocast(device, enabled=False)``, ``torch.cuda.amp.autocast(enabled=False)``, or a
    package's own ``autocast_disabled(...)`` helper, as roma has): its dtypes then do not depend
    on the caller's autocast state, which is all @custom_bwd would restore."""
    for node in backward.nodes_of(cst.With):
        for item in node.items:
            call = item.item
            if not isinstance(call, cst.Call):
                continue
            name = (dotted(call.func) or "").rsplit(".", 1)[-1].lower()
            enabled = call_keyword(call, "enabled")
            if name == "autocast" and isinstance(enabled, cst.Name) and enabled.value == "False":
                return True
            if "autocast" in name and ("disable" in name or "no_autocast" in name):
                return True
    return False
