"""AGL103 missing-staticmethod: forward/backward/setup_context/jvp/vjp without @staticmethod."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.class_model import METHOD_NAMES
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL103"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for name in METHOD_NAMES:
            method = model.own(name)
            if method is not None and not (method.is_static or method.is_classmethod):
                yield module.at_def(CODE, model, method, f"{name} of a Function class must be a @staticmethod")
