"""What AGL201 and AGL207 share: each tensor that forward keeps as a ctx attribute, and the harm
that follows from where it came from (see analysis/provenance.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import libcst as cst

from autograd_lint.analysis.class_model import CtxAttributeSet, FunctionModel
from autograd_lint.analysis.provenance import Origin, Provenance, Reads
from autograd_lint.analysis.tensorness import Tensorness


@dataclass
class CtxTensor:
    attr_set: CtxAttributeSet
    harm: Optional[str]  # the concrete harm (AGL201), or None: only hooks miss it (AGL207)

    @property
    def where(self) -> cst.CSTNode:
        """Where to report it: the assignment, or the element of a container
        (`ctx.tensors = (None, B)`) where it is written."""
        attr_set = self.attr_set
        return attr_set.statement if attr_set.index is None else attr_set.value


def ctx_tensors(model: FunctionModel) -> Iterator[CtxTensor]:
    """Every ctx attribute set to a tensor in the class's own forward/setup_context, unless the
    same tensor also goes to save_for_backward (then the saved copy is checked and hooked) and
    is not forward's output (whose attribute closes the reference cycle, saved or not)."""
    provenance = model.provenance
    for attr_set in model.ctx_attribute_sets:
        if attr_set.method.inherited or attr_set.value is None:
            continue
        if model.judge(attr_set.method)(attr_set.value) is not Tensorness.TENSOR:
            continue
        held = provenance.held_by(attr_set)
        if provenance.is_saved(attr_set.method, attr_set.value) and not _cycles(held):
            continue
        yield CtxTensor(attr_set, _harm(model, attr_set, held))


def _cycles(held: Provenance) -> bool:
    """Forward's output (or a view that keeps it as ``_base``) on ctx: output -> grad_fn (the
    ctx) -> attribute -> output (docs/runtime-mechanisms.md, F19)."""
    return held.origin is Origin.OUTPUT and not held.detached


def _harm(model: FunctionModel, attr_set: CtxAttributeSet, origin: Provenance) -> Optional[str]:
    provenance = model.provenance
    if _cycles(origin):
        if origin.view:
            return ("it is a view of forward's output (or an alias): output -> output.grad_fn (this ctx) -> "
                    "it -> the output is a reference cycle that keeps the graph and its tensors alive at "
                    "least until the cyclic garbage collector runs (a view's link to its base is inside "
                    "C++, where the collector cannot break it: then for good), so memory grows every step")
        return ("it is forward's output: output -> output.grad_fn (this ctx) -> the output is a "
                "reference cycle, so the graph and its tensors stay alive until the cyclic garbage "
                "collector runs, and memory grows every step in between")
    if origin.origin is Origin.OUTPUT:
        if provenance.backward_reads(attr_set.attr, attr_set.index) is not Reads.VALUES:
            return None
        return ("it shares the storage of forward's output, and backward reads its values: an in-place "
                "change to the output after forward silently corrupts the gradient, where "
                "save_for_backward would raise")
    if origin.origin is not Origin.INPUT or origin.position is None:
        return None
    # An input does harm on ctx when an in-place change to it between forward and backward is
    # realistic and backward's result depends on its values. Both hold for an input that
    # receives a gradient: an activation (later in-place ops: `relu_`, `+=`) or a trainable
    # weight (an optimizer step before this graph's backward, as GAN and actor-critic loops do).
    # An input whose gradient is None on every return is a constant of the op (a frozen or
    # quantized weight, a scale, a mask, a cache, data): nothing realistic writes it in place,
    # so it is AGL207's (a zero gradient, an empty input's, is none either). A read of
    # shape/dtype/device alone is not changed by an in-place write.
    if not provenance.input_gets_gradient(origin.position, zeros_are_none=True):
        return None
    if (provenance.backward_reads(attr_set.attr, attr_set.index) is not Reads.VALUES
            or provenance.is_index_tensor(origin.position)):
        return None
    inputs = model.known_inputs
    name = inputs[origin.position].name if origin.position < len(inputs) else f"#{origin.position}"
    what = f"forward input `{name}`" + (" (or a view of it)" if origin.view else "")
    return (f"it is {what}, which receives a gradient and whose values backward reads: an in-place "
            f"change to it between forward and backward (a later in-place op, an optimizer step) "
            f"silently corrupts the gradient, where save_for_backward would raise")
