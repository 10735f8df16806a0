"""AGL103 missing-staticmethod: forward/backward/setup_context/jvp/vjp without @staticmethod.

A warning: ``.apply`` looks the methods up on the class, so the code runs. An error for a class
written to be instantiated, whose forward or backward reads state that ``__init__`` sets on
``self`` (``FunctionModel.instance_state``): that class cannot run at all on PyTorch >= 0.4,
reported once, on forward."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.class_model import METHOD_NAMES, FunctionModel
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import is_ctx_attr
from autograd_lint.findings import Finding

CODE = "AGL103"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        state = instance_state_read(model)
        if state:
            forward = model.own("forward")
            shown = ", ".join(f"self.{attr}" for attr in state[:3]) + (f" and {len(state) - 3} more" if len(state) > 3 else "")
            yield module.at_def(
                CODE, model, forward,
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
            if method is not None and not (method.is_static or method.is_classmethod):
                yield module.at_def(CODE, model, method, f"{name} of a Function class must be a @staticmethod")


def instance_state_read(model: FunctionModel) -> list[str]:
    """The attributes of ``model.instance_state`` that its own forward or backward read on
    their first parameter, sorted; empty when there are none."""
    if not model.instance_state:
        return []
    read: set[str] = set()
    for name in ("forward", "backward"):
        method = model.own(name)
        if method is None or method.is_static or method.is_classmethod:
            continue
        names = method.ctx_name_set
        read |= {node.attr.value for node in method.nodes_of(cst.Attribute)
                 if is_ctx_attr(node, names) and node.attr.value in model.instance_state}
    return sorted(read)
