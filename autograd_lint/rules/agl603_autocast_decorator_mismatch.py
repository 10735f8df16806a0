"""AGL603 autocast-decorator-mismatch: ``@custom_fwd`` on forward without ``@custom_bwd`` on
backward, or the reverse."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL603"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        forward, backward = model.forward, model.backward
        if forward is None or backward is None or (forward.inherited and backward.inherited):
            continue
        forward_cast = any(name.endswith("custom_fwd") for name in forward.decorators)
        backward_cast = any(name.endswith("custom_bwd") for name in backward.decorators)
        if forward_cast and not backward_cast and not backward.inherited:
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
