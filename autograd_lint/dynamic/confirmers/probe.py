"""What every confirmer does with a Function class: call it, find its ctx, run its backward.

The mechanisms are those of docs/runtime-mechanisms.md: ``y.grad_fn`` *is* the ctx (M1), its
``vars()`` are the ctx attributes (M2), and ``ctx.apply(*grads)`` under ``torch.no_grad()`` calls
the user's backward (or vjp) directly and returns its raw values before autograd checks or casts
them (M3). Every probe starts from fresh inputs (``make_inputs()``), so a Function that mutates
its inputs or saved tensors cannot spoil the next probe.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import torch

MakeInputs = Callable[[], tuple]
Result = tuple[str, str]

CONFIRMED = "confirmed"
NOT_REPRODUCED = "not-reproduced"
UNVERIFIED = "unverified"


class Unverifiable(Exception):
    """Raised by a confirmer that cannot observe what it needs; the message is the evidence."""


@dataclass(frozen=True)
class Subject:
    """What a confirmer is asked about: the class, how to get inputs, and the static finding."""

    function_class: type
    make_inputs: MakeInputs
    finding: dict

    @property
    def name(self) -> str:
        return self.function_class.__name__

    def ctx_attribute(self) -> Optional[str]:
        """The ``ctx.<name>`` the finding's message is about (AGL201, AGL206 name it)."""
        match = re.search(r"\bctx\.([A-Za-z_]\w*)", self.finding.get("message") or "")
        return match.group(1) if match else None


@dataclass
class Applied:
    """One call ``F.apply(*inputs)`` and what it gave."""

    inputs: tuple
    output: Any  # as apply returned it

    @property
    def outputs(self) -> tuple:
        """One entry per forward output (backward takes one gradient per entry)."""
        return self.output if isinstance(self.output, tuple) else (self.output,)

    def tensor_inputs(self) -> list[tuple[int, torch.Tensor]]:
        return [(i, value) for i, value in enumerate(self.inputs) if isinstance(value, torch.Tensor)]

    @property
    def ctx(self) -> Any:
        """The ctx object of this call (``y.grad_fn``), or None when no output is in the graph."""
        for value in self.outputs:
            if isinstance(value, torch.Tensor) and value.grad_fn is not None:
                return value.grad_fn
        return None

    def require_ctx(self) -> Any:
        ctx = self.ctx
        if ctx is None:
            raise Unverifiable(
                "no output of apply(...) requires grad (no input requires grad, or every output is "
                "non-differentiable), so there is no ctx and backward never runs on this example")
        return ctx


def apply(subject: Subject, inputs: Optional[tuple] = None) -> Applied:
    """Call the Function; an exception here means the example cannot exercise it."""
    if inputs is None:
        inputs = fresh_inputs(subject)
    try:
        output = subject.function_class.apply(*inputs)
    except Exception as error:  # noqa: BLE001 - the user's forward can raise anything
        raise Unverifiable(f"{subject.name}.apply(...) raised {describe_error(error)}") from error
    return Applied(inputs, output)


def fresh_inputs(subject: Subject) -> tuple:
    try:
        return tuple(subject.make_inputs())
    except Exception as error:  # noqa: BLE001
        raise Unverifiable(f"could not build example inputs: {describe_error(error)}") from error


def output_grads(applied: Applied, seed: int = 0) -> tuple:
    """A dense gradient per forward output, as the engine would pass them: a random tensor for a
    floating output, zeros for an integer or bool tensor, None for a non-tensor output. Dense on
    purpose: the engine's ``y.sum()`` gradient is an expanded (stride-0) tensor that makes some
    in-place bugs raise for a reason that has nothing to do with the finding."""
    generator = torch.Generator().manual_seed(seed)
    grads = []
    for value in applied.outputs:
        if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()):
            noise = torch.randn(value.shape, generator=generator, dtype=torch.float64)
            grads.append(noise.to(dtype=value.dtype, device=value.device))
        elif isinstance(value, torch.Tensor):
            grads.append(torch.zeros_like(value))
        else:
            grads.append(None)
    return tuple(grads)


def call_backward(applied: Applied, grads: tuple) -> Any:
    """The user's backward (or vjp) called directly, its raw return value unchecked
    (docs/runtime-mechanisms.md, M3)."""
    ctx = applied.require_ctx()
    with torch.no_grad():
        return ctx.apply(*grads)


def as_gradients(raw: Any) -> tuple:
    """backward's value as PyTorch counts it: a tuple counts its elements, anything else is one."""
    return raw if isinstance(raw, tuple) else (raw,)


def run_backward(applied: Applied, seed: int = 0) -> None:
    """A real backward through the engine, from every output that requires grad."""
    pairs = [(value, grad) for value, grad in zip(applied.outputs, output_grads(applied, seed))
             if isinstance(value, torch.Tensor) and value.requires_grad]
    if not pairs:
        applied.require_ctx()  # raises the explanation
    torch.autograd.backward([value for value, _ in pairs], [grad for _, grad in pairs])


def backward_error(subject: Subject) -> Optional[BaseException]:
    """The exception a real forward + backward raises on fresh inputs, or None when it runs."""
    applied = apply(subject)
    try:
        run_backward(applied)
    except Unverifiable:
        raise
    except Exception as error:  # noqa: BLE001
        return error
    return None


@contextmanager
def patched(cls: type, name: str, value: Any) -> Iterator[None]:
    """Set ``cls.name = value`` for the duration, then restore exactly what was there."""
    missing = object()
    previous = cls.__dict__.get(name, missing)
    setattr(cls, name, value)
    try:
        yield
    finally:
        if previous is missing:
            delattr(cls, name)
        else:
            setattr(cls, name, previous)


def describe_error(error: BaseException) -> str:
    """``TypeError: first line of the message``, short enough for a report."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def describe_tensor(value: torch.Tensor) -> str:
    """``Tensor (4, 5) float64``."""
    return f"Tensor {tuple(value.shape)} {str(value.dtype).replace('torch.', '')}"


def describe_value(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return describe_tensor(value)
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}" if len(text) <= 40 else type(value).__name__


def tensors_in(value: Any, depth: int = 0) -> list[torch.Tensor]:
    """The tensors in a value, looking inside lists, tuples and dicts (not deeper than 3)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if depth >= 3:
        return []
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors_in(item, depth + 1)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors_in(item, depth + 1)]
    return []


def confirmed(evidence: str) -> Result:
    return CONFIRMED, evidence


def not_reproduced(evidence: str) -> Result:
    return NOT_REPRODUCED, evidence
