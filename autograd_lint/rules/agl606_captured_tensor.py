"""AGL606 captured-tensor: a Function class defined inside a function reads a tensor of that
function (a closure variable) instead of taking it as an input of ``apply``."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.closure import captured_reads
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import Finding

CODE = "AGL606"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        # Read by backward only: eager autograd is right there.
        for read in captured_reads(module, model, methods=("forward",)):
            if read.tensorness is not Tensorness.TENSOR:
                continue  # ints, modules, unknowns
            compile_note = (", and torch.compile(fullgraph=True) rejects the captured tensor"
                            if model.style == "new" else "")
            yield module.at(
                CODE, model, read.method, read.node,
                f"{read.method.name} reads `{read.name}`, a tensor of the enclosing function {read.function}, "
                f"not an input of apply: autograd gives `{read.name}` no gradient through {model.name} "
                f"(its .grad stays None even when it requires grad), torch.func.grad/jvp with respect to it "
                f"return zeros{compile_note}; pass it to {model.name}.apply(...) and return its gradient",
            )
