"""AGL103 missing-staticmethod: forward/backward/setup_context/jvp/vjp without @staticmethod.

A warning: ``.apply`` looks the methods up on the class, so the code runs. An error, reported
once on forward, for a class written to be instantiated, whose forward or backward reads state
that ``__init__`` sets on ``self`` (``FunctionModel.instance_state``): it cannot run at all on
PyTorch >= 0.4."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.class_model import METHOD_NAMES
from autograd_lint.analysis.intent import only_raises
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL103"
_DERIVATIVES = ("backward", "jvp", "vjp")


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        state = sorted(model.instance_state)
        if state:
            shown = ", ".join(f"self.{attr}" for attr in state[:3])
            if len(state) > 3:
                shown += f" and {len(state) - 3} more"
            yield module.at_def(
                CODE, model, model.own("forward"),
                f"forward of a Function class written to be instantiated: it reads {shown}, which "
                f"__init__ sets, and PyTorch no longer runs instances (calling one raises 'Legacy autograd "
                f"function with non-static forward method is deprecated'; {model.name}.apply passes a ctx "
                f"without that state: AttributeError); pass the state as arguments of .apply and make "
                f"forward and backward @staticmethod",
                severity="error",
            )
            continue
        for name in METHOD_NAMES:
            method = model.own(name)
            if method is None or method.is_static or method.is_classmethod:
                continue
            if name in _DERIVATIVES and only_raises(method):
                continue  # `raise NotImplementedError`: it never runs anything that could go wrong
            yield module.at_def(CODE, model, method, f"{name} of a Function class must be a @staticmethod")
