"""AGL403 strided-grad-to-kernel: backward hands a gradient parameter (or a view or cast of it)
to a custom kernel without making it contiguous first.

Autograd passes a gradient laid out as the next op made it (expanded after ``y.sum()``,
transposed after ``y.t() * c``: docs/runtime-mechanisms.md, M12); a kernel that reads raw
memory reads the wrong elements, silently, and gradcheck never shows it. An error where the
kernel certainly assumes a layout (a Triton launch without the gradient's strides, a raw
``data_ptr()``); a warning for an extension function or a custom op, which may make the tensor
contiguous inside, where we cannot see.
"""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.kernels import POINTER, TRITON, handoffs
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL403"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        grads = model.grad_params
        if backward is None or not grads or model.certainty.makes_contiguous(backward):
            continue  # `@input_guard` (fla's), `@ensure_contiguous` (liger's): the wrapper copies the gradients
        reported: set[int] = set()
        for handoff in handoffs(model, backward, {p.name: p.name for p in grads}):
            kernel = handoff.kernel
            if handoff.strides_passed or id(handoff.via or kernel.call) in reported:
                continue  # written for any layout: it gets the gradient's own strides
            reported.add(id(handoff.via or kernel.call))
            # A Triton kernel of this file reads the gradient by offsets from its pointer (one that
            # reads only the first element was never handed it), a raw address is read as laid
            # out; an imported kernel or an extension may make it contiguous, or read it by its
            # strides, where we cannot see.
            certain = kernel.kind == POINTER or (kernel.kind == TRITON and kernel.body_seen)
            where = (f" (in {handoff.method.name}(), line {handoff.method.span(kernel.call).line})"
                     if handoff.via is not None else "")
            what = (f"passes {kernel.shown} (of {handoff.source})" if kernel.kind == POINTER
                    else f"hands {handoff.source} to the {kernel.kind} {kernel.shown}")
            unless = ("" if certain else ", unless it reads it by its strides" if kernel.kind == TRITON
                      else ", unless it copies it to a contiguous tensor itself")
            yield module.at(
                CODE, model, backward, handoff.via or kernel.call,
                f"backward {what}{where} without .contiguous(): autograd may pass the gradient "
                f"non-contiguous (expanded after `y.sum()`, transposed after `y.t()`) and the kernel "
                f"then reads the wrong elements, silently{unless}; gradcheck only tries contiguous "
                f"gradients",
                severity="error" if certain else "warning",
                related=(module.related(handoff.method, kernel.call, f"{kernel.shown} called in {handoff.method.name}()")
                         if handoff.via is not None else ()),
            )
