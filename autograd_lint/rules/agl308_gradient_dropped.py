"""AGL308 gradient-dropped: backward returns None for an input that forward's output certainly
depends on through differentiable arithmetic (``analysis/dependence.py``) and that the file's
own callers fill with a trainable parameter (an ``nn.Parameter``, or the ``.weight``/``.bias`` of a
torch.nn module: ``analysis/parameters.py``), so that parameter silently never gets a gradient.
The finding points at the ``None``."""

from __future__ import annotations

import re
from typing import Iterator, Optional

import libcst as cst

from autograd_lint.analysis.dependence import certain_inputs
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import constant_index, dotted, is_ctx_attr
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import Finding, RelatedLocation
from autograd_lint.rules._common import is_stub, raises_only, reachable_returns, returned_values

CODE = "AGL308"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    trainable = module.trainable_arguments
    if not trainable.might_train():
        return  # no nn.Parameter nor torch.nn module in this file: no evidence that any input trains
    for model in module.classes:
        backward = model.own("backward")
        if backward is None or model.inputs is None or is_stub(backward) or raises_only(backward):
            continue
        if _accumulates_elsewhere(model, backward):
            continue  # `weight.main_grad.add_(...)`: the gradient goes around autograd on purpose
        if _says_frozen(module, model):
            continue  # "frozen base weight", "no gradient for the weight": documented on purpose
        returns = reachable_returns(backward)
        judge = model.judge(backward)
        gradients = [returned_values(r.value, judge) for r in returns]
        if not returns or any(g is None for g in gradients):
            continue  # a return we cannot read: it may give every gradient
        if all(_is_none(v, judge) for values in gradients for v in values):
            continue  # no gradient at all: AGL107's stub, or a Function never meant to train
        for position, forward_return in sorted(certain_inputs(model).items()):
            param = model.inputs[position]
            if _asks_whether_it_needs_grad(model, position, param.name):
                continue  # the author decides what it gets (ctx.needs_input_grad[i], .requires_grad)
            evidence = trainable.at(model.name, position)
            if evidence is None:
                continue  # maybe a constant by design (cos/sin, a mask, a frozen LoRA base): None is right
            if model.input_tensorness.get(param.name) is Tensorness.NOT_TENSOR:
                continue  # the evidence says otherwise: leave it
            if model.provenance.is_index_tensor(position):
                continue  # integer and boolean tensors cannot require grad
            if not all(position < len(values) and _is_none(values[position], judge) for values in gradients):
                continue
            where = _reported_node(returns[0], position)
            line = model.forward.span(forward_return).line
            yield module.at(
                CODE, model, backward, where,
                f"backward returns None for {param.name}, but forward's output (the return at line "
                f"{line}) depends on it through differentiable arithmetic, and the caller passes "
                f"{evidence.shown}, {evidence.made_by} (line {evidence.line}): its .grad stays None and it "
                f"never trains, with no error; return its gradient, or raise when "
                f"ctx.needs_input_grad[{position}] if it must stay constant",
                related=module.related(model.forward, forward_return,
                                       f"forward's output depends on {param.name} here")
                + _made_at(module, evidence.line, f"{evidence.shown}, {evidence.made_by}"),
            )


def _made_at(module: ModuleAnalysis, line: int, what: str) -> tuple[RelatedLocation, ...]:
    """Where the caller's trainable parameter is made (a line of this file; its first character)."""
    if not 0 < line <= len(module.lines):
        return ()
    text = module.lines[line - 1]
    return (RelatedLocation(module.path, line, len(text) - len(text.lstrip()) + 1, what),)


def _is_none(value: Optional[cst.BaseExpression], judge) -> bool:
    """``None``, or a name only ever bound to None in backward (``grad_bias = None``)."""
    if value is None:
        return True
    if isinstance(value, cst.Name):
        bound = judge.assignments.get(value.value)
        return bool(bound) and value.value not in judge.known and all(
            isinstance(b, cst.Name) and b.value == "None" for b in bound)
    return False


def _reported_node(ret: cst.Return, position: int) -> cst.CSTNode:
    """The tuple element at ``position`` (the None), else the whole return."""
    value = ret.value
    if isinstance(value, cst.Tuple) and position < len(value.elements) and not any(
            isinstance(e, cst.StarredElement) for e in value.elements):
        return value.elements[position].value
    return ret


_FROZEN_WORDS = re.compile(
    r"\bfrozen\b|\bfreez|not trained|never trained|no grad|no gradient|not trainable|non-trainable", re.IGNORECASE)


def _says_frozen(module: ModuleAnalysis, model) -> bool:
    """The class's text (docstring, comments) says some input is frozen or gets no gradient."""
    node = model.info.node
    text = "\n".join(module.lines[node.lineno - 1:getattr(node, "end_lineno", node.lineno)])
    return bool(_FROZEN_WORDS.search(text))


def _accumulates_elsewhere(model, backward) -> bool:
    """backward writes gradients itself (``w.main_grad.add_(dw)``, ``w.grad = dw``, a store that
    computes them later): Megatron's fused accumulation returns None for the weight on purpose.
    (``torch.nn.grad.conv2d_weight(...)``, the module of convolution gradients, is no such write.)"""
    for node in backward.nodes_of(cst.Attribute, cst.Name):
        text = node.attr.value if isinstance(node, cst.Attribute) else node.value
        if text in ("grad", "main_grad") and isinstance(node, cst.Attribute):
            if model.qualify(dotted(node) or "") == "torch.nn.grad":
                continue
            return True
        if "GradStore" in text or "grad_store" in text or "accumulat" in text.lower():
            return True
    return False


def _asks_whether_it_needs_grad(model, position: int, name: str) -> bool:
    """``ctx.needs_input_grad[position]``, ``ctx.needs_input_grad`` used whole (unpacked, in
    ``any(...)``), ``name.requires_grad`` in forward/setup_context, or any ``.requires_grad`` in
    backward (whose names are the saved ones)."""
    for method in model.methods.values():
        ctx_names = model.ctx_names(method)
        parents = method.parents
        for node in method.nodes_of(cst.Attribute):
            if is_ctx_attr(node, ctx_names, "needs_input_grad"):
                parent = parents.get(id(node))
                if not isinstance(parent, cst.Subscript) or constant_index(parent) in (None, position):
                    return True
            elif node.attr.value == "requires_grad":
                if method.name in ("backward", "vjp") or (isinstance(node.value, cst.Name) and node.value.value == name):
                    return True
    return False
