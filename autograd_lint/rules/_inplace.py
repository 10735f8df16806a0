"""The in-place rules (AGL301-303) differ only in which tensors they track; this runs the tracker."""

from __future__ import annotations

from typing import Callable, Iterator

import libcst as cst

from autograd_lint.analysis.class_model import SAVED_TENSORS, FunctionModel, Method
from autograd_lint.analysis.flow import AliasTracker, InplaceWrite
from autograd_lint.analysis.provenance import UNKNOWN, Origin, Provenance
from autograd_lint.analysis.syntax import is_ctx_attr


def grad_output_writes(model: FunctionModel, backward: Method) -> list[InplaceWrite]:
    return AliasTracker(set(model.grad_names), qualify=model.qualify).run(backward.node)


def saved_tensor_writes(model: FunctionModel, backward: Method) -> list[InplaceWrite]:
    ctx_names = model.ctx_names(backward)
    tensor_attrs = model.tensor_ctx_attributes

    def is_source(node) -> bool:
        return any(is_ctx_attr(node, ctx_names, a) for a in SAVED_TENSORS) or any(
            is_ctx_attr(node, ctx_names, a) for a in tensor_attrs
        )

    return AliasTracker(set(), is_source, is_source, model.qualify).run(backward.node)


def saved_tensor_writes_with_provenance(model: FunctionModel, backward: Method) -> list[tuple[InplaceWrite, Provenance]]:
    """Each in-place write to a saved tensor (or a tensor ctx attribute) in backward, with where
    forward got that tensor: an input or output (the write changes a tensor the caller holds),
    a private buffer, or unknown. One tracker runs per saved position and per attribute."""
    ctx_names = model.ctx_names(backward)
    provenance = model.provenance
    sources: list[tuple[Provenance, Callable, Callable]] = []
    positions = max((len(c.args) for c in model.save_calls if c.args is not None), default=0)
    for position in range(positions):
        def is_position(node, position=position) -> bool:
            return (isinstance(node, cst.Subscript) and any(is_ctx_attr(node.value, ctx_names, a) for a in SAVED_TENSORS)
                    and _constant_subscript(node) == position)

        def unpacks(value, index, position=position) -> bool:
            return index == position and any(is_ctx_attr(value, ctx_names, a) for a in SAVED_TENSORS)

        sources.append((provenance.saved_position(position), is_position, unpacks))
    for attr in sorted(model.tensor_ctx_attributes):
        def is_attr(node, attr=attr) -> bool:
            return is_ctx_attr(node, ctx_names, attr)

        sources.append((provenance.ctx_attribute(attr), is_attr, lambda value, index: False))
    found: dict[tuple[int, int], list[Provenance]] = {}
    for origin, is_source, unpacks in sources:
        tracker = AliasTracker(set(), is_source, qualify=model.qualify, unpacks_element=unpacks)
        for write in tracker.run(backward.node):
            found.setdefault((id(write.statement), id(write.written)), []).append(origin)
    result = []
    for write in saved_tensor_writes(model, backward):
        origins = found.get((id(write.statement), id(write.written)), [])
        shared = [o for o in origins if o.origin in (Origin.INPUT, Origin.OUTPUT)]
        result.append((write, shared[0] if shared else (origins[0] if len(origins) == 1 else UNKNOWN)))
    return result


def _constant_subscript(node: cst.Subscript):
    if len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
            return int(index.value.value)
    return None


def input_writes(model: FunctionModel, forward: Method, tracked: set[str]) -> Iterator[InplaceWrite]:
    yield from AliasTracker(tracked, qualify=model.qualify).run(forward.node)
