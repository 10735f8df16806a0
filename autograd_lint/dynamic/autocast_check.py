"""AGL906: does the Function survive mixed precision?

Users run forward under autocast and backward after it, outside the ``with`` block::

    with torch.autocast(device_type, dtype=...):
        loss = model(x)
    loss.backward()

Inside forward, autocast runs matmuls and convolutions in the lower precision, so outputs and
some saved values are half or bfloat16 while others stay float32. A custom backward runs outside
autocast, unless ``@torch.amp.custom_bwd`` restores forward's state, and then mixes the two:
``expected m1 and m2 to have the same dtype``. A kernel handed an autocast input raises
``expected scalar type Float but found BFloat16`` in forward itself. gradcheck never sees either:
it runs in float64 with autocast off.

The check runs that sequence on the CPU with ``torch.autocast("cpu", dtype=torch.bfloat16)`` on
float32 copies of the inputs, after the same sequence without autocast has run cleanly (otherwise
the failure is not autocast's, and the other checks report it). ``torch.amp.custom_fwd`` and
``custom_bwd`` name a device type, usually "cuda", and do nothing for another device's autocast;
so that a Function decorated for CUDA is judged as it behaves on CUDA, the decorators' device
type is pointed at the CPU for the duration of the check (docs/runtime-mechanisms.md, M11).

Only failures are reported. A gradient computed in bfloat16 for a float32 input is what
autocast's own ops give too, and autograd casts it back to the input's dtype.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import torch

from autograd_lint.dynamic.inputs import flatten_outputs

AUTOCAST_DEVICE = "cpu"
AUTOCAST_DTYPE = torch.bfloat16
METHODS = ("forward", "setup_context", "backward", "vjp")
# torch.amp's decorators, by the name of the wrapper they return (torch/amp/autocast_mode.py).
AMP_WRAPPERS = {"decorate_fwd": "custom_fwd", "decorate_bwd": "custom_bwd"}


@dataclass(frozen=True)
class AutocastFailure:
    message: str
    # The class carries torch.amp.custom_fwd/custom_bwd: its author means it to run under
    # autocast, so the failure is an error; otherwise a warning (a project may never use AMP).
    declares_autocast: bool


def autocast_failure(cls: type, make_inputs: Callable[[], tuple]) -> Optional[AutocastFailure]:
    if not any(_is_float32_able(value) for value in make_inputs()):
        return None
    with _decorators_on_cpu(cls) as decorators:
        if decorators is None:  # decorated for CUDA by an older torch we cannot point at the CPU
            return None
        if _run(cls, make_inputs, autocast=False) is not None:
            return None
        problem = _run(cls, make_inputs, autocast=True)
    if problem is None:
        return None
    # One finding line, under MESSAGE_LIMIT characters: the exception's first line, cut; what ran;
    # the fix. The rule page (rules/AGL906.md) says the rest (cast_inputs=, why backward differs).
    return AutocastFailure(f"{problem} (under autocast: CPU bfloat16 on forward, backward after it; both run "
                           f"without it): {_advice(decorators)}",
                           declares_autocast=bool(decorators))


MESSAGE_LIMIT = 300  # characters of the finding's message, with a class name of ~20 before it
_ERROR_LIMIT = 80  # characters of the exception's text kept in it


def _advice(decorators: set[str]) -> str:
    if not decorators:
        return "decorate forward with @torch.amp.custom_fwd, backward with @torch.amp.custom_bwd"
    if "custom_bwd" not in decorators:
        return "backward lacks @torch.amp.custom_bwd, which runs it under forward's autocast state"
    return "forward's bfloat16 tensors reach an operation that needs float32: cast them, or use cast_inputs="


def _is_float32_able(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def plain_run_error(cls: type, make_inputs: Callable[[], tuple]) -> Optional[str]:
    """What forward then backward raise on float32 inputs without autocast (decorators pointed at
    the CPU as in the check), or None. A lone @custom_bwd fails here already: it reads the
    ``ctx._fwd_used_autocast`` that only @custom_fwd sets."""
    with _decorators_on_cpu(cls) as decorators:
        return None if decorators is None else _run(cls, make_inputs, autocast=False)


def _float32(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
        return value.detach().float().requires_grad_(value.requires_grad)
    return value


def _run(cls: type, make_inputs: Callable[[], tuple], autocast: bool) -> Optional[str]:
    """Forward (under autocast or not), then backward outside it. What raised, or None."""
    inputs = tuple(_float32(value) for value in make_inputs())
    wanted = [value for value in inputs if isinstance(value, torch.Tensor) and value.requires_grad]
    with warnings.catch_warnings(), torch.enable_grad():
        warnings.simplefilter("ignore")
        try:
            with torch.autocast(AUTOCAST_DEVICE, dtype=AUTOCAST_DTYPE, enabled=autocast):
                outputs = flatten_outputs(cls.apply(*inputs))
        except Exception as error:
            return f"forward raised {_describe(error)}"
        outputs = [value for value in outputs if isinstance(value, torch.Tensor) and value.requires_grad]
        if not outputs or not wanted:
            return None
        try:
            torch.autograd.grad(outputs, wanted, [torch.ones_like(value) for value in outputs], allow_unused=True)
        except Exception as error:
            return f"backward raised {_describe(error)}"
    return None


@contextlib.contextmanager
def _decorators_on_cpu(cls: type) -> Iterator[Optional[set[str]]]:
    """Point the device type of every torch.amp decorator on the class's methods at the CPU for
    the duration; yield the decorators' names (an empty set: none), or None when a method is
    wrapped by a decorator that cannot be pointed (torch.cuda.amp's before torch 2.4)."""
    cells, names = [], set()
    for method in (getattr(cls, name, None) for name in METHODS):
        for wrapper in _wrappers(method):
            code = wrapper.__code__
            if _from_torch_file(code, ("cuda", "amp")):
                yield None
                return
            if code.co_name in AMP_WRAPPERS and _from_torch_file(code, ("amp", "autocast_mode.py")):
                names.add(AMP_WRAPPERS[code.co_name])
                cell = dict(zip(code.co_freevars, wrapper.__closure__ or ())).get("device_type")
                if cell is not None:
                    cells.append((cell, cell.cell_contents))
    for cell, _ in cells:
        cell.cell_contents = AUTOCAST_DEVICE
    try:
        yield names
    finally:
        for cell, device_type in cells:
            cell.cell_contents = device_type


def _wrappers(method: Any) -> Iterator[Any]:
    """The function and each function it wraps (``functools.wraps`` sets ``__wrapped__``)."""
    seen = 0
    while callable(method) and hasattr(method, "__code__") and seen < 10:
        yield method
        method, seen = getattr(method, "__wrapped__", None), seen + 1


def _from_torch_file(code: Any, tail: tuple[str, ...]) -> bool:
    return os.path.join("torch", *tail) in code.co_filename


def _describe(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    if len(text) > _ERROR_LIMIT:
        text = text[: _ERROR_LIMIT - 3].rstrip() + "..."
    return f"{type(error).__name__}: {text}".rstrip(": ")
