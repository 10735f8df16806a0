"""Backward replayed on the same gradient values laid out the ways autograd really passes them
(child side, torch imported): the AGL905 runtime check and the AGL403 confirmer share it.

gradcheck only ever gives backward contiguous gradients, but the engine passes a gradient as the
op after the Function made it: expanded with stride 0 after ``y.sum()`` or ``y.sum(0)``,
transposed after ``y.t() * c``, ``einsum`` or a ``bmm`` of ``y.transpose(1, 2)``, every other
element after ``torch.stack([y, z], -1)`` (docs/runtime-mechanisms.md, M12). A backward that
reads a gradient's memory as if it were contiguous (a CUDA kernel given ``grad.data_ptr()``, a
Triton launch without the gradient's strides) computes garbage from those, silently; one that
calls ``grad.view(-1)`` raises. Each replay starts from fresh inputs and calls backward directly
(M3), so nothing one replay does to its ctx or saved tensors reaches the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

# The layouts, in the order they are tried, with an op that makes autograd pass it.
LAYOUTS: dict[str, str] = {
    "transposed": "as after `y.t() * c`, `einsum` or a `bmm` of `y.transpose(1, 2)`",
    "expanded": "as after `y.sum(0)` or `y.sum()`",
    "interleaved": "as after `torch.stack([y, z], -1)`",
}


@dataclass(frozen=True)
class LayoutDifference:
    """backward gave something else for the same gradient values laid out otherwise."""

    output: int  # the forward output whose gradient was laid out otherwise
    layout: str  # a key of LAYOUTS
    strides: tuple[int, ...]
    kind: str  # "values" (different gradients) or "raises" (backward raised only then)
    detail: str  # "gradient for input 0 differs by up to 2.3" or "RuntimeError: view size ..."
    outputs: int = 1  # how many outputs forward has

    def describe(self) -> str:
        where = f"the gradient of output {self.output}" if self.outputs > 1 else "the gradient"
        arrived = f"when {where} arrives {self.layout} (stride {self.strides}, {LAYOUTS[self.layout]})"
        if self.kind == "raises":
            return f"{arrived}, backward raises {self.detail}; it runs on the same values contiguous"
        return (f"{arrived}, backward returns other gradients than for the same values contiguous "
                f"({self.detail}); gradcheck only tries contiguous gradients")


class NotReplayable(Exception):
    """The replay cannot say anything: no ctx, backward raises or is not repeatable."""


def relaid(grad: torch.Tensor, layout: str) -> Optional[tuple[torch.Tensor, torch.Tensor]]:
    """(the gradient laid out as ``layout``, a contiguous tensor of the same values), or None when
    the layout does not apply to its shape. For "expanded" the values are the first row repeated
    (an expanded tensor cannot hold any other), so the contiguous twin is made from them. Both
    are new tensors: a backward that writes into its gradient cannot change ``grad``."""
    if grad.dim() == 0 or grad.numel() < 2:
        return None
    if layout == "transposed":
        if grad.dim() < 2 or grad.shape[-1] < 2 or grad.shape[-2] < 2:
            return None
        return grad.transpose(-1, -2).contiguous().transpose(-1, -2), grad.clone()
    if layout == "expanded":
        if grad.shape[0] < 2:
            return None
        expanded = grad[:1].clone().expand(grad.shape)
        return expanded, expanded.contiguous()
    if layout == "interleaved":
        wider = torch.zeros(*grad.shape[:-1], 2 * grad.shape[-1], dtype=grad.dtype, device=grad.device)
        every_other = wider[..., ::2]
        every_other.copy_(grad)
        return every_other, grad.clone()
    raise ValueError(layout)


def layout_differences(cls: type, make_inputs: Callable[[], tuple], seed: int = 0) -> list[LayoutDifference]:
    """For each floating output in turn and each layout, backward on the laid-out gradient
    against backward on the same values contiguous (the other outputs' gradients unchanged);
    the first difference of each output. ``NotReplayable`` when backward does not run on
    contiguous gradients or gives two different results for the same ones."""
    grads = _gradients(cls, make_inputs, seed)
    first = _backward(cls, make_inputs, grads)
    if not _same(first, _backward(cls, make_inputs, grads)):
        raise NotReplayable("backward gives different results for the same inputs and gradients")
    found = []
    for index, grad in enumerate(grads):
        if not (isinstance(grad, torch.Tensor) and grad.is_floating_point()):
            continue
        for layout in LAYOUTS:
            if relaid(grad, layout) is None:
                continue
            try:
                expected = first if layout != "expanded" else _backward(
                    cls, make_inputs, _with(grads, index, relaid(grad, layout)[1]))
            except NotReplayable:
                continue  # these values fail contiguous too: nothing to compare
            laid_out = relaid(grad, layout)[0]  # new each time: backward may write into it
            strides = tuple(laid_out.stride())
            try:
                got = _backward(cls, make_inputs, _with(grads, index, laid_out))
            except NotReplayable as error:
                found.append(LayoutDifference(index, layout, strides, "raises", str(error), len(grads)))
                break
            detail = _difference(expected, got)
            if detail:
                found.append(LayoutDifference(index, layout, strides, "values", detail, len(grads)))
                break
    return found


def _gradients(cls: type, make_inputs: Callable[[], tuple], seed: int) -> tuple:
    """One dense gradient per forward output: random for a floating tensor, zeros for another
    tensor, None for a non-tensor (``ctx.apply`` takes one per output)."""
    outputs = _outputs(cls, make_inputs())[1]
    generator = torch.Generator().manual_seed(seed)
    grads = []
    for value in outputs:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            noise = torch.randn(value.shape, generator=generator, dtype=torch.float64)
            grads.append(noise.to(dtype=value.dtype, device=value.device))
        elif isinstance(value, torch.Tensor):
            grads.append(torch.zeros_like(value))
        else:
            grads.append(None)
    return tuple(grads)


def _outputs(cls: type, inputs: tuple) -> tuple[Any, list]:
    with torch.enable_grad():
        output = cls.apply(*inputs)
    outputs = list(output) if isinstance(output, (tuple, list)) else [output]
    node = next((value.grad_fn for value in outputs
                 if isinstance(value, torch.Tensor) and value.grad_fn is not None
                 and getattr(type(value.grad_fn), "_forward_cls", None) is cls), None)
    if node is None:
        raise NotReplayable("no output requires grad, so backward never runs")
    return node, outputs


def _backward(cls: type, make_inputs: Callable[[], tuple], grads: tuple) -> tuple:
    """backward's raw result for fresh inputs and these gradients (docs/runtime-mechanisms.md,
    M3), each tensor copied so that no later call can change it. The gradients are passed as
    they are: a backward that writes into one must be given a new one each call (``relaid``)."""
    node, _ = _outputs(cls, make_inputs())
    grads = tuple(g.clone() if isinstance(g, torch.Tensor) and g.is_contiguous() else g for g in grads)
    try:
        with torch.no_grad():
            result = node.apply(*grads)
    except Exception as error:  # noqa: BLE001 - the user's backward can raise anything
        raise NotReplayable(_describe(error)) from error
    result = result if isinstance(result, tuple) else (result,)
    return tuple(value.detach().clone() if isinstance(value, torch.Tensor) else value for value in result)


def _with(grads: tuple, index: int, grad: torch.Tensor) -> tuple:
    return grads[:index] + (grad,) + grads[index + 1:]


def _tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol): a layout changes the order of a few sums at most, far below these."""
    if dtype == torch.float64:
        return 1e-7, 1e-9
    if dtype == torch.float32:
        return 1e-4, 1e-5
    return 1e-2, 1e-2


def _difference(expected: tuple, got: tuple) -> str:
    """What differs between two results of backward, or "" when they agree."""
    if len(expected) != len(got):
        return f"{len(got)} values returned instead of {len(expected)}"
    for index, (a, b) in enumerate(zip(expected, got)):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape:
                return f"the gradient for input {index} has shape {tuple(b.shape)} instead of {tuple(a.shape)}"
            if not (a.is_floating_point() or a.is_complex()):
                if not torch.equal(a, b):
                    return f"the gradient for input {index} differs"
                continue
            rtol, atol = _tolerances(a.dtype)
            if not torch.allclose(a, b.to(a.dtype), rtol=rtol, atol=atol, equal_nan=True):
                largest = (a.double() - b.double()).abs().nan_to_num(nan=float("inf")).max().item()
                return f"the gradient for input {index} differs by up to {largest:.3g}"
        elif (a is None) != (b is None) or isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
            return f"the gradient for input {index} is {_shown(b)} instead of {_shown(a)}"
    return ""


def _same(first: tuple, second: tuple) -> bool:
    if len(first) != len(second):
        return False
    for a, b in zip(first, second):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or not torch.equal(a.nan_to_num(), b.nan_to_num()):
                return False
        elif (a is None) != (b is None):
            return False
    return True


def _shown(value: Any) -> str:
    return "None" if value is None else "a tensor" if isinstance(value, torch.Tensor) else type(value).__name__


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if len(text) > 160:
        text = text[:157] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
