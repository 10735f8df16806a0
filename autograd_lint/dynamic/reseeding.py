"""A forward that draws random numbers (dropout, stochastic rounding, a noisy gate), made
repeatable by reseeding the random generators before each of its calls.

Finite differences of a random function are noise, so such a class used to stop before
gradcheck ("forward is not deterministic"). With the generators reseeded before every forward
call, each call draws the same numbers: forward becomes one fixed function of its inputs (the
dropout mask, the rounding noise fixed), and gradcheck compares backward with that function's
derivative, which is what backward must compute from the draws forward kept on ``ctx``.

Only forward is reseeded. A backward that draws numbers of its own (shake-shake's fresh
``beta``, a stochastic gradient estimator) gives different gradients for one forward, so no
comparison is possible: ``backward_is_repeatable`` tells, and the checks stop there as before.
A forward that changes its inputs in place stays unrepeatable under reseeding too.
"""

from __future__ import annotations

import functools
import random
import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

import torch

SEED = 20261128
NOTE = ("forward draws random numbers: every check reseeded the random generators before each forward call, "
        "so that each call drew the same numbers (a fixed dropout mask, fixed rounding noise), and compared "
        "backward with the derivative of forward for those draws")
FINDING_NOTE = "forward draws random numbers: checked with its draws fixed, by reseeding before each forward call"
BACKWARD_DRAWS = ("backward draws random numbers of its own (two backward calls on one forward gave different "
                  "gradients, with forward's draws fixed): there is no fixed function to compare it with")


def _reseed() -> None:
    torch.manual_seed(SEED)  # the CPU generator and every CUDA device's
    random.seed(SEED)
    numpy = sys.modules.get("numpy")  # only when the user's code imported it
    if numpy is not None:
        numpy.random.seed(SEED % 2**32)


@contextmanager
def reseeded_forward(cls: type) -> Iterator[None]:
    """Within the block, ``cls.forward`` reseeds the generators before it runs; the class and the
    generators' states are put back afterwards, for the module's next classes."""
    original = cls.__dict__.get("forward")
    forward = cls.forward

    @functools.wraps(forward)  # keeps __wrapped__: source reads and once_differentiable look through it
    def seeded_forward(*args, **kwargs):
        _reseed()
        return forward(*args, **kwargs)

    states = _generator_states()
    cls.forward = staticmethod(seeded_forward)
    try:
        yield
    finally:
        if original is None:
            del cls.forward
        else:
            cls.forward = original
        _restore(states)


def _generator_states() -> tuple:
    numpy = sys.modules.get("numpy")
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    return (torch.get_rng_state(), cuda, random.getstate(),
            numpy.random.get_state() if numpy is not None else None)


def _restore(states: tuple) -> None:
    cpu, cuda, python, numpy_state = states
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
    random.setstate(python)
    numpy = sys.modules.get("numpy")
    if numpy is not None and numpy_state is not None:
        numpy.random.set_state(numpy_state)


def backward_is_repeatable(cls: type, make_inputs: Callable[[], tuple], flatten_outputs: Callable) -> Optional[bool]:
    """Backward twice on one forward, with the same output gradients: the same input gradients?
    None when it cannot be told (backward raises, or cannot run twice on one graph; nothing to
    compare)."""
    inputs = make_inputs()
    wanted = [value for value in inputs if isinstance(value, torch.Tensor) and value.requires_grad]
    try:
        outputs = [value for value in flatten_outputs(cls.apply(*inputs))
                   if isinstance(value, torch.Tensor) and value.requires_grad]
        if not wanted or not outputs:
            return None
        seeds = [torch.linspace(-1.0, 1.0, value.numel(), dtype=value.dtype, device=value.device).reshape(value.shape)
                 for value in outputs]
        first = torch.autograd.grad(outputs, wanted, seeds, retain_graph=True, allow_unused=True)
        second = torch.autograd.grad(outputs, wanted, seeds, allow_unused=True)
    except Exception:  # noqa: BLE001 - user code: any failure means "cannot tell"
        return None
    for a, b in zip(first, second):
        if (a is None) != (b is None):
            return False
        if a is not None and not torch.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True):
            return False
    return True
