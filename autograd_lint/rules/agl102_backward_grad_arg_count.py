"""AGL102 backward-grad-arg-count: backward takes a different number of gradients than forward returns outputs."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding
from autograd_lint.rules._common import all_outputs_non_differentiable, plural, raises_only

CODE = "AGL102"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward, grads, outputs = model.own("backward"), model.grad_params, model.output_count
        if backward is None or grads is None or outputs is None or all_outputs_non_differentiable(model):
            continue
        if raises_only(backward):  # calling it fails either way: a TypeError instead of its own error
            continue
        required = sum(1 for p in grads if not p.has_default)
        if required <= outputs <= len(grads):
            continue
        yield module.at_def(
            CODE, model, backward,
            f"backward takes {plural(len(grads), 'gradient')} after ctx but forward returns "
            f"{plural(outputs, 'output')}: PyTorch passes one gradient per output, so calling backward "
            f"raises TypeError",
        )
