"""The in-place rules (AGL301-303) differ only in which tensors they track; this runs the tracker."""

from __future__ import annotations

from typing import Iterator, Union

from autograd_lint.analysis.class_model import SAVED_TENSORS, FunctionModel, Method
from autograd_lint.analysis.flow import AliasTracker, InplaceWrite
from autograd_lint.analysis.syntax import is_ctx_attr
from autograd_lint.analysis.tensorness import T


def grad_output_writes(model: FunctionModel, backward: Method) -> list[InplaceWrite]:
    return AliasTracker(set(model.grad_names), qualify=model.qualify).run(backward.node)


def saved_tensor_writes(model: FunctionModel, backward: Method) -> list[InplaceWrite]:
    ctx_names = model.ctx_names(backward)
    tensor_attrs = model.tensor_ctx_attributes

    def is_source(node) -> bool:
        return any(is_ctx_attr(node, ctx_names, a) for a in SAVED_TENSORS) or any(
            is_ctx_attr(node, ctx_names, a) for a in tensor_attrs
        ) or model.ctx_element(node, ctx_names) is T.TENSOR  # ctx.tensors[1]

    def unpacks_sources(node) -> Union[bool, list[bool]]:
        if is_source(node):
            return True
        container = model.ctx_containers.get(node.attr.value) if is_ctx_attr(node, ctx_names) else None
        if container is None or container[0] is None:
            return False
        length, elements = container  # `a, b = ctx.cache`: the names forward stored a tensor at
        return [elements.get(i) is T.TENSOR for i in range(length)]

    return AliasTracker(set(), is_source, unpacks_sources, model.qualify).run(backward.node)


def input_writes(model: FunctionModel, forward: Method, tracked: set[str]) -> Iterator[InplaceWrite]:
    yield from AliasTracker(tracked, qualify=model.qualify).run(forward.node)
