"""AGL107 stub-derivative: backward/jvp/vjp whose body is only pass, ..., a docstring or return None."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import Finding
from autograd_lint.rules._common import all_outputs_non_differentiable, is_stub

CODE = "AGL107"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        if model.inputs is None or Tensorness.TENSOR not in model.input_tensorness.values():
            continue
        # No output needs a gradient: PyTorch never calls backward/vjp, so a stub is harmless.
        never_called = ("backward", "vjp") if all_outputs_non_differentiable(model) else ()
        for name in ("backward", "jvp", "vjp"):
            method = model.own(name)
            if method is not None and name not in never_called and is_stub(method):
                yield module.at_def(
                    CODE, model, method,
                    f"{name} is a stub: it returns None for every input, so gradients silently "
                    f"stop here (raise NotImplementedError if it is not supported)",
                )
