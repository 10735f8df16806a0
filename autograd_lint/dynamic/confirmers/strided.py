"""Gradients laid out as autograd may pass them (AGL403): backward replayed on the same values
transposed, expanded and interleaved against contiguous (``dynamic/layouts.py``, the replay the
runtime check AGL905 runs too; docs/runtime-mechanisms.md, M12)."""

from __future__ import annotations

from autograd_lint.dynamic.confirmers.probe import (
    Result, Subject, Unverifiable, apply, confirmed, fresh_inputs, not_reproduced,
)
from autograd_lint.dynamic.layouts import LAYOUTS, NotReplayable, layout_differences


def strided_grad_to_kernel(subject: Subject) -> Result:
    """AGL403: the kernel reads the gradient's memory as if it were contiguous, so backward gives
    other gradients (or raises) when the same values arrive laid out otherwise."""
    apply(subject).require_ctx()  # inputs that build, a forward that runs, a backward to call
    try:
        differences = layout_differences(subject.function_class, lambda: fresh_inputs(subject))
    except NotReplayable as reason:
        raise Unverifiable(f"backward cannot be replayed on this example: {reason}") from reason
    if differences:
        return confirmed(differences[0].describe())
    return not_reproduced(f"backward returns the same gradients for {', '.join(LAYOUTS)} gradients as for "
                          "contiguous ones")
