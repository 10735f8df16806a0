"""AGL402 factory-without-dtype-device: a tensor factory in backward without dtype= or device=."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.class_model import Method
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import call_keyword, dotted, names_read
from autograd_lint.findings import Finding

CODE = "AGL402"
FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
                       "tensor", "arange", "linspace", "logspace", "eye"})
# Factories whose dtype comes from their arguments: integer index tensors when used as indices.
_INDEX_FACTORIES = frozenset({"torch.arange", "torch.randperm", "torch.randint", "torch.tensor"})
# `torch.zeros(n).to(x)`: the result is moved/cast right away, a common idiom of real code
# (mmcv's chamfer_distance; docs/runtime-mechanisms.md, idioms).
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
        } | _index_expressions(backward.nodes) | _factories_bound_to_index_names(backward, model.qualify)
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


def _factories_bound_to_index_names(backward: Method, qualify) -> set[int]:
    """ids of integer factories assigned to a name that backward then uses only inside ``[...]``
    (``index = torch.arange(n)`` ... ``g[index, target]``): the same index tensor as the inline
    form. Not an argument of ``index_select``/``gather``/...: those want the index on the
    tensor's device (a CPU index with a CUDA tensor raises "Expected all tensors to be on the
    same device ... argument index"), whereas ``[...]`` accepts a CPU index."""
    candidates: dict[str, list[int]] = {}  # name -> the factory calls assigned to it
    for node in backward.nodes_of(cst.Assign):
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and isinstance(node.value, cst.Call):
            name = dotted(node.value.func)
            if name is not None and qualify(name) in _INDEX_FACTORIES:
                candidates.setdefault(node.targets[0].target.value, []).append(id(node.value))
    return {call for name, calls in candidates.items() if _used_only_as_index(name, backward) for call in calls}


def _used_only_as_index(name: str, backward: Method) -> bool:
    """Every read of ``name`` in backward is a whole element of a subscript's index, and there is
    at least one. A nested function or lambda that mentions it could do anything with it."""
    if any(name in names_read(n) for n in backward.nodes_of(cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return False
    not_reads: set[int] = set()  # names that are not reads: assignment targets, attributes, keywords
    index_reads: set[int] = set()
    for node in backward.nodes:
        if isinstance(node, cst.AssignTarget):
            not_reads.add(id(node.target))
        elif isinstance(node, cst.Attribute):
            not_reads.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            not_reads.add(id(node.keyword))
        elif isinstance(node, cst.SubscriptElement) and isinstance(node.slice, cst.Index):
            value = node.slice.value
            elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
            index_reads |= {id(e) for e in elements}
    reads = [n for n in backward.nodes_of(cst.Name) if n.value == name and id(n) not in not_reads]
    return bool(reads) and all(id(n) in index_reads for n in reads)


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
