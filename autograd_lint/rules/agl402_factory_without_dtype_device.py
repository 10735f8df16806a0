"""AGL402 factory-without-dtype-device: a tensor factory in backward without dtype= or device=."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import call_keyword, dotted
from autograd_lint.findings import Finding

CODE = "AGL402"
FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
                       "tensor", "arange", "linspace", "logspace", "eye"})
# `torch.zeros(n).to(x)`: the result is moved/cast right away (real-code-idioms.md).
_CONVERTERS = frozenset({"to", "type_as", "cuda", "double", "float", "half", "bfloat16", "type", "cpu"})


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        if backward is None:
            continue
        converted = {
            id(node.func.value)
            for node in backward.nodes
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _CONVERTERS
        } | _index_expressions(backward.nodes)
        for node in backward.nodes:
            if not isinstance(node, cst.Call) or id(node) in converted:
                continue
            name = dotted(node.func)
            if name is None:
                continue
            qualified = model.qualify(name)
            head, _, factory = qualified.rpartition(".")
            if head != "torch" or factory not in FACTORIES:
                continue
            if any(a.star == "**" for a in node.args) or call_keyword(node, "out") is not None:
                continue  # **factory_kwargs may hold dtype; out= fixes dtype and device
            if call_keyword(node, "dtype") is None and call_keyword(node, "device") is None:
                yield module.at(
                    CODE, model, backward, node,
                    f"torch.{factory}(...) in backward without dtype= or device=: it is float32 on the CPU "
                    f"whatever the gradient is; use torch.{factory}_like / grad.new_{factory}(...) or pass "
                    f"dtype= and device=" if factory in ("zeros", "ones", "empty", "full") else
                    f"torch.{factory}(...) in backward without dtype= or device=: pass dtype= and device= "
                    f"taken from the gradient",
                )


def _index_expressions(nodes) -> set[int]:
    """ids of calls used directly as an index (``g[torch.arange(n), target]``): an index tensor
    may live on the CPU and its dtype is not the gradient's."""
    ids = set()
    for node in nodes:
        if isinstance(node, cst.Subscript):
            for element in node.slice:
                index = element.slice
                if isinstance(index, cst.Index):
                    ids.add(id(index.value))
    return ids
