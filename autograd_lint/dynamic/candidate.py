"""``Candidate``: one way of calling a Function class, as each source of example inputs offers it.

The sources (``inputs`` for declared examples, ``callsites``, ``synthesis``) yield candidates and
``inputs.choose_inputs`` tries them in order; the type lives here, below all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass
class Candidate:
    source: str  # "declared" | "call-site" | "synthesized"
    detail: str  # where exactly: "@example #1", "test_ops.py:12" (a call site in the user's tests), "(3, 4), (5, 4)"
    recipe: Callable[[], tuple]  # raw arguments: TensorSpecs, tensors of any dtype, other values
    # Positions of the arguments that are tensors by default only (no annotation, name or call
    # site said so): ``inputs.choose_inputs`` passes them without grad when backward gives them none.
    guessed: tuple[int, ...] = ()
    # Guessed tensors passed without grad because backward gives them no gradient: constants of
    # the Function whose shapes are guesses (a filter bank, an operator), so a failed gradcheck
    # for the other inputs may be the guess's fault (judging.py makes it a warning).
    guessed_constants: tuple[str, ...] = ()
    # The arguments came from the package's own code (``callers``): their shapes are real, so a
    # tensor passed without grad is no guessed constant (nothing is made uncertain by it).
    shapes_known: bool = False


@dataclass(frozen=True)
class CapturedTensor:
    """A tensor that the package's own code passed to ``apply`` (``callers``): whether it required
    grad there, and the structure its values have (symmetric, lower triangular: ``structure``'s
    names), which the checks keep when they perturb it."""

    tensor: Any  # a torch.Tensor (this module stays free of torch)
    requires_grad: bool
    structure: Optional[str] = None
