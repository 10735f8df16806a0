"""AGL106 setup-context-mismatch: setup_context with a forward that still takes ctx, or the wrong signature."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.class_model import Method
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL106"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        setup = model.own("setup_context")
        if setup is None:
            continue
        forward = model.forward
        if forward is not None and forward.params and forward.params[0].name == "ctx":
            yield module.at_def(
                CODE, model, setup,
                "setup_context is defined but forward still takes ctx: with setup_context, "
                "forward takes only the inputs (apply raises TypeError, or the inputs shift by one)",
            )
        elif setup.star_args is None and not _accepts_three(setup):
            yield module.at_def(
                CODE, model, setup,
                f"setup_context takes {len(setup.params)} parameters: it must take exactly (ctx, inputs, output) "
                f"(apply raises TypeError)",
            )


def _accepts_three(setup: Method) -> bool:
    """PyTorch calls ``setup_context(ctx, inputs, output)``: extra parameters are fine as long
    as they have defaults (``extra=None``)."""
    required = sum(1 for p in setup.params if not p.has_default)
    return required <= 3 <= len(setup.params)
