"""The in-place rules (AGL301-303) differ only in which tensors they track; this runs the tracker.

A helper that forward/backward call with a tracked tensor (a static or class method of the class,
or a function of the same file: ``FunctionModel.helper``) is analysed as part of its caller, one
level deep: its parameters bound to tracked tensors are tracked in its body, and a write there is
reported at the call, naming the helper and the line of the write."""

from __future__ import annotations

from typing import Callable, Iterator, Optional, Union

import libcst as cst

from autograd_lint.analysis.class_model import (
    SAVED_TENSORS,
    FunctionModel,
    Method,
    bind_arguments,
    subscript_position,
)
from autograd_lint.analysis.flow import AliasTracker, InplaceWrite
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.provenance import UNKNOWN, Origin, Provenance
from autograd_lint.analysis.syntax import constant_index, is_ctx_attr
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import RelatedLocation


def grad_output_writes(model: FunctionModel, backward: Method) -> list[InplaceWrite]:
    def tracker(tracked: set[str], ctx_names: frozenset[str], helper_writes=None, known_truth=None) -> AliasTracker:
        return AliasTracker(tracked, qualify=model.qualify, helper_writes=helper_writes, known_truth=known_truth)

    return tracker(set(model.grad_names), frozenset(), _helper_writes(model, backward, tracker)).run(backward.node)


def saved_tensor_writes(model: FunctionModel, backward: Method) -> list[InplaceWrite]:
    def tracker(tracked: set[str], ctx_names: frozenset[str], helper_writes=None, known_truth=None) -> AliasTracker:
        return _saved_tensor_tracker(model, tracked, ctx_names, helper_writes, known_truth)

    helpers = _helper_writes(model, backward, tracker)
    return tracker(set(), model.ctx_names(backward), helpers).run(backward.node)


def _saved_tensor_tracker(model: FunctionModel, tracked: set[str], ctx_names: frozenset[str],
                          helper_writes, known_truth=None) -> AliasTracker:
    tensor_attrs = model.tensor_ctx_attributes

    def is_source(node) -> bool:
        return any(is_ctx_attr(node, ctx_names, a) for a in SAVED_TENSORS) or any(
            is_ctx_attr(node, ctx_names, a) for a in tensor_attrs
        ) or model.ctx_element(node, ctx_names) is Tensorness.TENSOR  # ctx.tensors[1]

    def unpacks_sources(node) -> Union[bool, list[bool]]:
        if is_source(node):
            return True
        container = model.ctx_containers.get(node.attr.value) if is_ctx_attr(node, ctx_names) else None
        if container is None or container[0] is None:
            return False
        length, elements = container  # `a, b = ctx.cache`: the names forward stored a tensor at
        return [elements.get(i) is Tensorness.TENSOR for i in range(length)]

    return AliasTracker(tracked, is_source, unpacks_sources, model.qualify, helper_writes, known_truth)


def saved_tensor_writes_with_provenance(
    model: FunctionModel, backward: Method
) -> list[tuple[InplaceWrite, Provenance, Optional[tuple[Method, cst.CSTNode]]]]:
    """Each in-place write to a saved tensor (or a tensor ctx attribute) in backward, with where
    forward got that tensor: an input or output (the write changes a tensor the caller holds),
    a private buffer, or unknown; and where forward saved it (the argument of the one
    ``save_for_backward`` call, the one statement that sets the attribute), None when not one
    place. One tracker runs per saved position and per attribute, and
    follows helpers as ``saved_tensor_writes`` does (a helper handed ctx reads the same source
    through its own ctx name). Those trackers only sort the writes ``saved_tensor_writes``
    finds, so they run only when it finds one (most backwards write to no saved tensor)."""
    writes = saved_tensor_writes(model, backward)
    if not writes:
        return []
    provenance = model.provenance
    # (origin, where it was saved, source test for given ctx names, which elements of
    # `a, b = <value>` it binds)
    sources: list[tuple[Provenance, Optional[tuple[Method, cst.CSTNode]], Callable, Callable]] = []
    save_calls = [c for c in model.save_calls if c.args is not None]
    positions = max((len(c.args) for c in model.save_calls if c.args is not None), default=0)
    for position in range(positions):
        def is_position(node, ctx_names, position=position) -> bool:
            return (isinstance(node, cst.Subscript)
                    and any(is_ctx_attr(node.value, ctx_names, a) for a in SAVED_TENSORS)
                    and constant_index(node) == position)

        def unpacks(value, index, ctx_names, position=position) -> bool:
            return index == position and any(is_ctx_attr(value, ctx_names, a) for a in SAVED_TENSORS)

        saved_at = ((save_calls[0].method, save_calls[0].args[position])
                    if len(model.save_calls) == len(save_calls) == 1 and position < len(save_calls[0].args) else None)
        sources.append((provenance.saved_position(position), saved_at, is_position, unpacks))
    for attr in sorted(model.tensor_ctx_attributes):
        def is_attr(node, ctx_names, attr=attr) -> bool:
            return is_ctx_attr(node, ctx_names, attr)

        sets = [s for s in model.ctx_attribute_sets if s.attr == attr]
        saved_at = (sets[0].method, sets[0].statement) if len(sets) == 1 else None
        sources.append((provenance.ctx_attribute(attr), saved_at, is_attr, lambda value, index, ctx_names: False))
    found: dict[tuple[int, int], list[tuple[Provenance, Optional[tuple[Method, cst.CSTNode]]]]] = {}
    for origin, saved_at, is_source, unpacks in sources:
        def tracker(tracked: set[str], ctx_names: frozenset[str], helper_writes=None, known_truth=None,
                    is_source=is_source, unpacks=unpacks) -> AliasTracker:
            return AliasTracker(
                tracked, lambda node: is_source(node, ctx_names), qualify=model.qualify,
                helper_writes=helper_writes, known_truth=known_truth,
                unpacks_element=lambda value, index: unpacks(value, index, ctx_names),
            )

        helpers = _helper_writes(model, backward, tracker)
        for write in tracker(set(), model.ctx_names(backward), helpers).run(backward.node):
            found.setdefault((id(write.statement), id(write.written)), []).append((origin, saved_at))
    result = []
    for write in writes:
        origins = found.get((id(write.statement), id(write.written)), [])
        shared = [o for o in origins if o[0].origin in (Origin.INPUT, Origin.OUTPUT)]
        chosen = shared[0] if shared else (origins[0] if len(origins) == 1 else (UNKNOWN, None))
        result.append((write, *chosen))
    return result


def write_related(module: ModuleAnalysis, write: InplaceWrite) -> tuple[RelatedLocation, ...]:
    """The write inside a helper, for a finding reported at the helper's call."""
    if write.made_in is None:
        return ()
    helper, statement = write.made_in
    return module.related(helper, statement, f"the {write.how} in {helper.name}()")


def input_writes(model: FunctionModel, forward: Method, tracked: set[str]) -> Iterator[InplaceWrite]:
    star = forward.star_args
    inputs = model.known_inputs
    from_star = inputs[len(inputs) - len(_unpacked_positions(model, forward)):] if star else []

    def is_source(node) -> bool:
        # `x = args[0]`: the input at that position
        if star is None or not isinstance(node, cst.Subscript):
            return False
        position = subscript_position(node, star)
        return position is not None and 0 <= position < len(from_star) and from_star[position].name in tracked

    def unpacks_sources(node) -> Union[bool, list[bool]]:
        # `a, b = args` (forward(ctx, *args)): the names bound to tracked inputs stay tracked
        if star is None or not (isinstance(node, cst.Name) and node.value == star):
            return False
        return [name in tracked for name in _unpacked_names(forward, star)]

    def tracker(tracked_here: set[str], ctx_names: frozenset[str], helper_writes=None,
                known_truth=None) -> AliasTracker:
        return AliasTracker(tracked_here, qualify=model.qualify, helper_writes=helper_writes, known_truth=known_truth)

    helpers = _helper_writes(model, forward, tracker)
    yield from AliasTracker(tracked, is_source, unpacks_sources, model.qualify, helpers).run(forward.node)


def _helper_writes(model: FunctionModel, caller: Method, make_tracker: Callable[..., AliasTracker]):
    """The ``helper_writes`` hook of a tracker over ``caller``: the writes a helper called with
    tracked tensors (or ctx) makes into them, each reported at the call's statement."""
    caller_ctx = model.ctx_names(caller)

    def helper_writes(statement, call: cst.Call, aliases: frozenset[str], tracker: AliasTracker) -> list[InplaceWrite]:
        helper = model.helper(call, passing=lambda value: tracker.tracked(value, aliases) is not None or (
            isinstance(value, cst.Name) and value.value in caller_ctx))
        bound = bind_arguments(helper, call) if helper is not None else None
        if not bound:
            return []
        tracked: dict[str, str] = {}  # helper parameter -> the caller's tracked name
        ctx_params: set[str] = set()
        for param, argument in bound.items():
            name = tracker.tracked(argument, aliases)
            if name is not None:
                tracked[param] = name
            elif isinstance(argument, cst.Name) and argument.value in caller_ctx:
                ctx_params.add(param)
        if not tracked and not ctx_params:
            return []
        # No helper hook inside: one level deep. `linear_quantize(x, ..., inplace=False)`: the
        # helper's `if inplace:` branch does not run.
        inner = make_tracker(set(tracked), frozenset(ctx_params), known_truth=_constant_truth(helper, bound))
        return [
            InplaceWrite(statement, tracked.get(write.name, write.name), write.how, write.written,
                         where=f" in {helper.name}() at line {helper.span(write.statement).line}",
                         made_in=(helper, write.statement))
            for write in inner.run(helper.node)
        ]

    return helper_writes


def _constant_truth(helper: Method, bound: dict[str, cst.BaseExpression]) -> dict[str, bool]:
    """The truth of the helper's parameters bound to a constant (``True``/``False``/``None``, a
    number), or left to a constant default."""
    truth = {}
    for param in helper.params:
        value = bound.get(param.name, param.default)
        if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
            truth[param.name] = value.value == "True"
        elif isinstance(value, cst.Integer):
            truth[param.name] = int(value.value, 0) != 0
    return truth


def _unpacked_positions(model: FunctionModel, forward: Method) -> range:
    """Positions of ``*args`` that forward names (the tail of ``known_inputs``)."""
    named = len(forward.params) - (1 if model.style == "legacy" else 0)
    return range(max(0, len(model.known_inputs) - named))


def _unpacked_names(forward: Method, star: str) -> list[str]:
    """The names of forward's top-level ``a, b, *rest = args``, by position (None-like "" for a
    starred or non-name element)."""
    for node in forward.nodes_of(cst.Assign):
        target = node.targets[0].target if len(node.targets) == 1 else None
        if isinstance(node.value, cst.Name) and node.value.value == star and isinstance(target, (cst.Tuple, cst.List)):
            return [e.value.value if isinstance(e.value, cst.Name) and not isinstance(e, cst.StarredElement) else ""
                    for e in target.elements]
    return []
