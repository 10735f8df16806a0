"""AGL907: does backward survive an undefined (``None``) gradient?

With ``ctx.set_materialize_grads(False)`` autograd passes ``None``, not zeros, for the gradient
of an output the loss does not use. A backward that computes with it raises ``TypeError`` the
first time a caller leaves an output unused (docs/runtime-mechanisms.md, M10). The engine
decides what backward receives, so the check goes through it rather than calling backward by
hand: a Function that keeps materialization on gets zeros here too and passes.

The cases, each on fresh inputs:
- every gradient defined (the baseline: if backward fails here the problem is not ``None``, and
  gradcheck reports it);
- for a Function with several differentiable outputs, each output used alone, the others left
  unused;
- every gradient undefined (what gradcheck's ``check_undefined_grad`` does, through the same
  ``UndefinedGrad`` node).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

import torch

from autograd_lint.dynamic.inputs import flatten_outputs


def undefined_gradient_failure(cls: type, make_inputs: Callable[[], tuple]) -> Optional[str]:
    """The message of the first case whose backward raises, or None."""
    outputs_count = _differentiable_output_count(cls, make_inputs)
    if outputs_count == 0 or _backward_error(cls, make_inputs, used=None) is not None:
        return None
    if outputs_count > 1:
        for used in range(outputs_count):
            error = _backward_error(cls, make_inputs, used=used)
            if error is not None:
                unused = [str(index) for index in range(outputs_count) if index != used]
                return (f"backward raised {error} when only output {used} is used: the gradient of output"
                        f"{'s' * (len(unused) > 1)} {', '.join(unused)} is None "
                        "(ctx.set_materialize_grads(False) passes None, not zeros, for an unused output)")
    error = _backward_error(cls, make_inputs, used=None, undefined=True)
    if error is not None:
        return (f"backward raised {error} when every gradient is undefined (None), as gradcheck's "
                "check_undefined_grad passes them (ctx.set_materialize_grads(False))")
    return None


def _differentiable_output_count(cls: type, make_inputs: Callable[[], tuple]) -> int:
    with torch.enable_grad():
        return len(_differentiable(flatten_outputs(cls.apply(*make_inputs()))))


def _differentiable(outputs: list) -> list:
    return [value for value in outputs if isinstance(value, torch.Tensor) and value.requires_grad]


def _backward_error(cls: type, make_inputs: Callable[[], tuple], used: Optional[int],
                    undefined: bool = False) -> Optional[str]:
    """Run forward, then backward from output ``used`` alone (None: from all of them); with
    ``undefined``, through an UndefinedGrad node on each output. The exception as text, or None."""
    inputs = make_inputs()
    wanted = [value for value in inputs if isinstance(value, torch.Tensor) and value.requires_grad]
    if not wanted:
        return None
    with torch.enable_grad():
        outputs = _differentiable(flatten_outputs(cls.apply(*inputs)))
        if used is not None:
            outputs = outputs[used:used + 1]
        if undefined:
            make_undefined = getattr(getattr(torch._C, "_functions", None), "UndefinedGrad", None)
            if make_undefined is None:  # a torch without it: the case cannot be built
                return None
            outputs = [make_undefined()(value) for value in outputs]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.autograd.grad(outputs, wanted, [torch.randn_like(value) for value in outputs],
                                    allow_unused=True)
        except Exception as error:  # the user's backward raised
            return f"{type(error).__name__}: {_first_line(error)}"
    return None


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:300] if lines else type(error).__name__
