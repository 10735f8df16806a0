"""Example inputs for ``--dynamic``, declared without importing torch.

``--dynamic`` needs arguments to call ``MyFn.apply(...)`` with. The first place it looks is what
the user declares, in one of two ways (neither imports torch, so static linting and the flake8
plugin stay torch-free)::

    from autograd_lint.examples import example, tensor

    @example(tensor(4, 5), tensor(5), 0.5)          # MyFn.apply(x, bias, 0.5)
    @example(tensor(2, 3, low=0.1, high=2.0), tensor(3), 1.0)
    class MyFn(torch.autograd.Function):
        ...

or, in a module that must not depend on autograd-lint at all, a module-level mapping from class
name to a list of argument tuples (plain tuples of ints stand for shapes only through
``tensor``; anything else is passed as it is)::

    __autograd_lint_examples__ = {
        "MyFn": [(tensor(4, 5), tensor(5), 0.5)],
        "Gather": [lambda: (torch.randn(3, 4, dtype=torch.double, requires_grad=True),
                            torch.tensor([0, 2]))],   # a callable returning the arguments
    }

A :class:`TensorSpec` becomes a real tensor only inside the ``--dynamic`` child process: floating
dtypes are drawn uniformly from ``[low, high)`` (default ``[-1, 1)``) and require grad unless
``requires_grad=False``; integer dtypes are drawn from ``[low, high)`` (default ``[0, 4)``) and
never require grad; ``bool`` is a random mask.

A floating tensor can ask for a matrix structure over its last two dimensions (which must be
equal), for a Function whose input is a covariance, a Cholesky factor or a natural parameter::

    @example(tensor(4, 4, structure="spd"), tensor(4, 3))     # a covariance and a right-hand side

- ``"symmetric"``: ``(B + Bᵀ)/2``;
- ``"spd"``: symmetric positive definite, ``B Bᵀ + n·I``;
- ``"negative-definite"``: ``-(B Bᵀ + n·I)/n`` (a natural parameter ``-½Σ⁻¹``);
- ``"lower-triangular"``: a Cholesky factor, zero above the diagonal, a diagonal in ``[1, 2)``.

``--dynamic`` then checks gradients on that set only (gradcheck of forward composed with the
projection onto it: ``(X + Xᵀ)/2`` or ``tril(X)``), so a backward that returns the symmetrized
gradient, or only the lower triangle's, is judged by the derivative along the set it is meant for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

EXAMPLES_ATTRIBUTE = "__autograd_lint_examples__"

FLOATING_DTYPES = frozenset({"float64", "float32", "float16", "bfloat16", "complex128", "complex64"})
INTEGER_DTYPES = frozenset({"int64", "int32", "int16", "int8", "uint8"})
DTYPES = FLOATING_DTYPES | INTEGER_DTYPES | {"bool"}
# Matrix structures a floating tensor can ask for (dynamic/structure.py builds and projects them),
# and a vector's: positive weights that sum to one over the last dimension.
MATRIX_STRUCTURES = ("symmetric", "spd", "negative-definite", "lower-triangular")
STRUCTURES = (*MATRIX_STRUCTURES, "distribution")


@dataclass(frozen=True)
class TensorSpec:
    """A tensor to build later: its shape, dtype name and value range."""

    shape: tuple[int, ...]
    dtype: str = "float64"
    requires_grad: Optional[bool] = None  # None: True for floating dtypes, False otherwise
    low: Optional[float] = None
    high: Optional[float] = None
    structure: Optional[str] = None  # one of STRUCTURES: over the last two (equal) dimensions, a
    # distribution over the last one

    @property
    def is_floating(self) -> bool:
        return self.dtype in FLOATING_DTYPES

    @property
    def wants_grad(self) -> bool:
        if self.requires_grad is None:
            return self.is_floating
        return self.requires_grad


def tensor(*shape: int, dtype: str = "float64", requires_grad: Optional[bool] = None,
           low: Optional[float] = None, high: Optional[float] = None,
           structure: Optional[str] = None) -> TensorSpec:
    """A tensor argument of the given shape (``tensor()`` is a 0-dim tensor)."""
    if dtype not in DTYPES:
        raise ValueError(f"tensor(dtype={dtype!r}): expected one of {', '.join(sorted(DTYPES))}")
    if not all(isinstance(size, int) and size >= 0 for size in shape):
        raise ValueError(f"tensor{shape}: sizes must be non-negative ints")
    if structure is not None:
        if structure not in STRUCTURES:
            raise ValueError(f"tensor(structure={structure!r}): expected one of {', '.join(STRUCTURES)}")
        if structure in MATRIX_STRUCTURES and (
                dtype not in FLOATING_DTYPES or len(shape) < 2 or shape[-1] != shape[-2]):
            raise ValueError(f"tensor{shape}, structure={structure!r}: a structure needs a floating tensor "
                             "whose last two sizes are equal")
        if structure not in MATRIX_STRUCTURES and (dtype not in FLOATING_DTYPES or not shape):
            raise ValueError(f"tensor{shape}, structure={structure!r}: a distribution needs a floating tensor "
                             "of at least one dimension")
    return TensorSpec(tuple(shape), dtype, requires_grad, low, high, structure)


ClassT = TypeVar("ClassT", bound=type)


def example(*args: Any) -> Callable[[ClassT], ClassT]:
    """Class decorator: one more example call ``cls.apply(*args)`` for ``--dynamic``.

    Stack it to give several examples; they are tried in the order written (top first).
    """

    def attach(cls: ClassT) -> ClassT:
        own = list(cls.__dict__.get(EXAMPLES_ATTRIBUTE, ()))  # never a base class's list
        own.insert(0, tuple(args))  # decorators apply bottom-up; keep reading order
        setattr(cls, EXAMPLES_ATTRIBUTE, own)
        return cls

    return attach
