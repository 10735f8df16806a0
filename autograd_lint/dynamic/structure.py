"""Structured matrix inputs: symmetric, SPD, negative definite, lower triangular; and vectors
that are distributions (positive weights summing to one) (child side).

Some Functions only mean their matrix inputs to be a covariance (SPD), a Cholesky factor (lower
triangular, positive diagonal) or a natural parameter ``-½Σ⁻¹`` (negative definite). On a plain
random matrix their forward raises (``linalg.cholesky: ... not positive-definite``, ``must be
batches of square matrices``), or runs and then gradcheck fails for no fault of backward's.

**Building them.** ``candidates`` asks for a structure from a parameter's name (``chol``, ``L``,
``tril`` -> lower triangular; ``covar``, ``cov``, ``precision``, ``spd``, ``gram`` -> SPD; a
natural ``nat_covar``, ``natural_mat`` -> negative definite) or from forward's docstring for that
parameter ("a symmetric matrix", "positive definite", "lower triangular"); those candidates come
before the plain guesses. ``retry_candidates`` reads forward's errors on the plain guesses instead.
The other float tensors are coupled to the structured matrices' size n: a vector ``(n,)`` (a mean,
a ``*_vec``), a right-hand side ``(n, 5)``, or a square ``(n, n)``, most likely first by name.

**Checking them honestly.** gradcheck perturbs every element on its own, so its finite
differences leave the symmetric (or triangular) set, where forward was never meant to be
evaluated: a correct backward that returns the symmetrized gradient (the usual convention, as
``torch.linalg.eigh``'s) fails against them. ``project`` composes forward with P, which maps free
leaves onto the set (``(X + Xᵀ)/2``, ``tril(X)``); autograd's backward through P projects the
analytical Jacobian as the finite differences are projected, whatever convention backward uses.
At the base point P(X) = X, so forward sees the very inputs that were built. checks.py applies it
to gradcheck and gradgradcheck (everything that compares with finite differences); checks that
call backward directly on the given values need none.

**A square matrix beside a structured one** (``middle`` beside ``chol`` in a variational
update, where it is ``S - I``) is built general. When gradcheck fails on it and passes once it is
symmetrized, checks.py takes the failure for the guess's (``symmetric_companions``) and says so.

A tensor carries no structure: ``make_inputs_factory`` records the recipe's structures on the
``make_inputs`` callable (``of`` reads them back).
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
from typing import Any, Callable, Iterator, Optional

import torch

from autograd_lint.dynamic.callsites import last_name
from autograd_lint.dynamic.candidate import Candidate, CapturedTensor
from autograd_lint.dynamic.synthesis import FLOAT, INDEX, Slot, classify, forward_function, forward_parameters
from autograd_lint.examples import TensorSpec

SYMMETRIC, SPD, NEGATIVE_DEFINITE, LOWER_TRIANGULAR = "symmetric", "spd", "negative-definite", "lower-triangular"
# Not a matrix: a vector of positive weights summing to one (the marginals of an optimal-transport
# problem). Sinkhorn-type forwards on weights that do not sum alike never converge, and their
# gradient (a dual potential, defined up to a constant) is judged along the simplex only.
DISTRIBUTION = "distribution"
SIZE = 4  # n of the structured matrices; the coupled right-hand sides get 5 columns (a size of their own)
COLUMNS = 5
MAX_STRUCTURED = 16  # candidates per class: a forward call each, within the search's time budget

_TRIANGULAR_TOKENS = frozenset({"chol", "cholesky", "tril", "cholfactor"})
_TRIANGULAR_NAMES = frozenset({"L", "l", "chol_factor", "lower_cholesky"})
_NATURAL_TOKENS = frozenset({"nat", "natural"})
_MATRIX_TOKENS = frozenset({"covar", "cov", "covariance", "mat", "matrix", "prec", "precision"})
_SPD_TOKENS = frozenset({"covar", "cov", "covariance", "precision", "spd", "psd", "gram"})
_VECTOR_TOKENS = frozenset({"mean", "mu", "vec", "vector", "loc", "values", "value", "diag", "b"})

# Words of forward's docstring about one parameter -> the structure they ask for (first wins).
_DOC_STRUCTURES = (
    (re.compile(r"lower[- ]triangular|cholesky", re.IGNORECASE), LOWER_TRIANGULAR),
    (re.compile(r"negative[- ]definite", re.IGNORECASE), NEGATIVE_DEFINITE),
    (re.compile(r"positive[- ](?:semi-?)?definite|\bspd\b|\bpsd\b|covariance", re.IGNORECASE), SPD),
    (re.compile(r"symmetric", re.IGNORECASE), SYMMETRIC),
    (re.compile(r"\bdistribution\b|\bhistogram\b|\bmarginals?\b|probability (?:vector|weights|mass)|"
                r"sums? to (?:one|1)\b", re.IGNORECASE), DISTRIBUTION),
)
# forward's errors on the plain guesses -> the structure to try for a matrix parameter.
_ERROR_STRUCTURES = (
    (re.compile(r"triangular", re.IGNORECASE), LOWER_TRIANGULAR),
    (re.compile(r"positive[- ]definite|cholesky|square matri|must be batches of square", re.IGNORECASE), SPD),
    (re.compile(r"symmetric|hermitian", re.IGNORECASE), SYMMETRIC),
)


def name_structure(name: str) -> Optional[str]:
    """The structure a parameter's name asks for, or None."""
    if name in _TRIANGULAR_NAMES:
        return LOWER_TRIANGULAR
    tokens = _tokens(name)
    if tokens & _TRIANGULAR_TOKENS or any(token.startswith("chol") for token in tokens):
        return LOWER_TRIANGULAR
    if tokens & _NATURAL_TOKENS and tokens & _MATRIX_TOKENS:
        return NEGATIVE_DEFINITE
    if tokens & _SPD_TOKENS or {"kernel", "matrix"} <= tokens:
        return SPD
    return None


def doc_structure(cls: type, name: str) -> Optional[str]:
    """The structure forward's (or the class's) docstring gives parameter ``name``:
    ``:param matrix: A symmetric matrix``, ``matrix (Tensor): a covariance``."""
    for doc in (inspect.getdoc(getattr(cls, "forward", None)), inspect.getdoc(cls)):
        text = _parameter_doc(doc or "", name)
        for pattern, structure in _DOC_STRUCTURES:
            if text and pattern.search(text):
                return structure
    return None


def _parameter_doc(doc: str, name: str) -> str:
    """The line that documents ``name`` (reST ``:param name:``, Google ``name (type):``, a bullet
    ``- name: ...``) and its continuation lines (indented deeper)."""
    lines = doc.splitlines()
    quoted = re.escape(name)
    head = re.compile(rf"^\s*(?::param\s+(?:[\w\[\], .]+\s+)?{quoted}\s*:|(?:[-*]\s+)?{quoted}\s*(?:\([^)]*\))?\s*:)")
    for number, line in enumerate(lines):
        if head.match(line):
            indent = len(line) - len(line.lstrip())
            block = [line]
            for following in lines[number + 1:]:
                if following.strip() and len(following) - len(following.lstrip()) <= indent:
                    break
                block.append(following)
            return " ".join(block)
    return ""


def _tokens(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return {token for token in spaced.lower().split("_") if token}


# --- candidates ---------------------------------------------------------------------------------

def candidates(cls: Any, parameters: Optional[list[inspect.Parameter]] = None,
               plain_values: Optional[dict[int, Any]] = None) -> Iterator[Candidate]:
    """Structured candidates for a class whose parameter names or docstring ask for a structure
    (none otherwise): they come before the plain guesses. ``parameters``: another function's
    than forward's (``callers.Caller``: a function that calls ``apply``)."""
    slots = _float_slots(cls, parameters, plain_values)
    if slots is None:
        return
    wanted = {slot.name: name_structure(slot.name) or doc_structure(cls, slot.name)
              for slot in slots if slot.kind == FLOAT}
    floats = list(wanted)
    if floats and not any(wanted.values()) and calls_symmetric_solver(cls):
        # forward decomposes a symmetric matrix (`torch.linalg.eigh`, a helper `_safe_eigh`): the
        # first tensor is one. eigh reads one triangle: on a general matrix gradcheck's finite
        # differences and a correct backward's symmetric gradient disagree (a false AGL901). SPD,
        # for the spectral functions that take a root or a log of the eigenvalues.
        wanted[floats[0]] = SPD
    if any(wanted.values()):
        yield from _structured(slots, wanted, "structured")


_SYMMETRIC_SOLVER = re.compile(r"eigh|eigvalsh|symeig|syevd", re.IGNORECASE)


def calls_symmetric_solver(cls: Any) -> bool:
    """Whether forward calls a symmetric eigensolver, by name (``torch.linalg.eigh``,
    ``torch.linalg.eigvalsh``, a helper of the package named so: ``_safe_eigh``)."""
    function = forward_function(cls)
    return function is not None and any(
        isinstance(node, ast.Call) and _SYMMETRIC_SOLVER.search(last_name(node.func) or "") is not None
        for node in ast.walk(function))


def calls_general_eigensolver(cls: Any) -> bool:
    """Whether forward calls ``eig`` itself (``torch.linalg.eig``, ``numpy.linalg.eig``): the
    eigenvectors of a general matrix are defined up to a complex phase each, and their gradient
    only through functions that do not depend on it (torch's own ``linalg.eig`` says so), so
    gradcheck of raw eigenvector outputs fails for a correct backward."""
    function = forward_function(cls)
    return function is not None and any(
        isinstance(node, ast.Call) and last_name(node.func) == "eig" for node in ast.walk(function))


def retry_candidates(cls: type, errors: list[str]) -> Iterator[Candidate]:
    """Second tries when forward refused every guess with an error about a matrix's structure:
    each float parameter in turn (named ones first) gets the structure the error asks for."""
    text = " ".join(errors)
    structure = next((wanted for pattern, wanted in _ERROR_STRUCTURES if pattern.search(text)), None)
    slots = _float_slots(cls)
    if structure is None or slots is None:
        return
    floats = [slot.name for slot in slots if slot.kind == FLOAT]
    named = {name: name_structure(name) or doc_structure(cls, name) for name in floats}
    order = sorted(floats, key=lambda name: named[name] is None)
    for name in order[:4]:
        wanted = dict(named)
        wanted[name] = wanted[name] or structure
        yield from _structured(slots, wanted, f"structured after forward's error ({structure})")


def _float_slots(cls: Any, parameters: Optional[list[inspect.Parameter]] = None,
                 plain_values: Optional[dict[int, Any]] = None) -> Optional[list[Any]]:
    """forward's slots (or ``parameters``'): a string option that the call sites pass is taken."""
    parameters = forward_parameters(cls) if parameters is None else parameters
    if parameters is None:
        return None
    slots = []
    for position, parameter in enumerate(parameters):
        classified = classify(parameter)
        if classified is None and position in (plain_values or {}):
            classified = [Slot(parameter.name, "value", (plain_values[position],))]
        if classified is None:
            return None
        slots.extend(classified)
    return slots


def _structured(slots: list[Any], wanted: dict[str, Optional[str]], label: str) -> Iterator[Candidate]:
    """Structured matrices (n, n), then (2, n, n) batched; the other float tensors coupled to n."""
    others = [slot.name for slot in slots if slot.kind == FLOAT and not wanted.get(slot.name)]
    count = 0
    for batch in ((), (2,)):
        for shapes in itertools.product(*[_coupled_shapes(name) for name in others]):
            plan = dict(zip(others, shapes))
            specs, described = [], []
            for slot in slots:
                if slot.kind == FLOAT:
                    structure = wanted.get(slot.name)
                    shape = batch + (((SIZE,) if structure == DISTRIBUTION else (SIZE, SIZE)) if structure
                                     else plan[slot.name])
                    specs.append(TensorSpec(shape, structure=structure))
                    described.append(f"{slot.name} {shape}" + (f" {structure}" if structure else ""))
                elif slot.kind == "value":
                    value = slot.values[0]  # the most likely value (synthesis.NAMED_VALUES' first)
                    specs.append(value)
                    described.append(f"{slot.name}={value!r}")
                elif slot.kind == INDEX:
                    specs.append(TensorSpec((SIZE,), dtype="int64", low=0, high=SIZE))
                    described.append(f"{slot.name} ({SIZE},) int64")
                else:
                    specs.append(TensorSpec(batch + (SIZE, SIZE), dtype="bool"))
                    described.append(f"{slot.name} mask")
            frozen = tuple(specs)
            yield Candidate("synthesized", f"{label} (n={SIZE}): {', '.join(described)}", lambda frozen=frozen: frozen)
            count += 1
            if count >= MAX_STRUCTURED:
                return


def _coupled_shapes(name: str) -> tuple[tuple[int, ...], ...]:
    """A tensor beside n-by-n structured matrices: a vector (n,), a right-hand side (n, 5) or a
    square (n, n), the likeliest first for its name."""
    vector, rhs, square = (SIZE,), (SIZE, COLUMNS), (SIZE, SIZE)
    if _tokens(name) & _VECTOR_TOKENS:
        return vector, rhs, square
    return rhs, vector, square


# --- building and projecting ----------------------------------------------------------------------

def materialize(spec: TensorSpec) -> torch.Tensor:
    """A float64 tensor of ``spec.shape`` with ``spec.structure`` over its last two dimensions
    (a distribution: over its last one)."""
    n = spec.shape[-1]
    if spec.structure == DISTRIBUTION:
        weights = torch.rand(spec.shape, dtype=torch.float64) + 0.5
        return weights / weights.sum(-1, keepdim=True)
    base = torch.rand(spec.shape, dtype=torch.float64) * 2 - 1
    eye = torch.eye(n, dtype=torch.float64)
    if spec.structure == SYMMETRIC:
        return (base + base.mT) / 2
    if spec.structure == SPD:
        return base @ base.mT + n * eye
    if spec.structure == NEGATIVE_DEFINITE:
        return -(base @ base.mT + n * eye) / n
    if spec.structure == LOWER_TRIANGULAR:
        diagonal = torch.rand(spec.shape[:-1], dtype=torch.float64) + 1.0
        return base.tril(-1) / 2 + torch.diag_embed(diagonal)
    raise ValueError(f"unknown structure {spec.structure!r}")


def structures_of(recipe: Callable[[], tuple]) -> tuple[Optional[str], ...]:
    """Each argument's structure in a recipe (None for a plain one); () when there is none."""
    try:
        raw = recipe()
    except Exception:  # a declared callable that fails says so when the inputs are built
        return ()
    raw = raw if isinstance(raw, (tuple, list)) else (raw,)
    found = tuple(value.structure if isinstance(value, (TensorSpec, CapturedTensor)) else None for value in raw)
    return found if any(found) else ()


def of(make_inputs: Callable[[], tuple]) -> tuple[Optional[str], ...]:
    """The structures ``make_inputs_factory`` recorded for these inputs (() for plain ones)."""
    return getattr(make_inputs, "structures", ())


def project(function: Callable[..., Any], structures: tuple[Optional[str], ...]) -> Callable[..., Any]:
    """``function`` composed with P: each structured argument mapped onto its set first."""
    if not any(structures):
        return function

    def projected(*inputs: Any) -> Any:
        return function(*(onto(value, structures[index]) if index < len(structures) else value
                          for index, value in enumerate(inputs)))

    return projected


def onto(value: Any, structure: Optional[str]) -> Any:
    """P for one argument: the nearest matrix of the set in each direction gradcheck moves."""
    if structure is None or not isinstance(value, torch.Tensor):
        return value
    if structure == LOWER_TRIANGULAR:
        return value.tril()
    if structure == DISTRIBUTION:
        return value / value.sum(-1, keepdim=True)
    return (value + value.mT) / 2


def describe(structures: tuple[Optional[str], ...], names: list[str]) -> str:
    """"`chol` lower-triangular, `middle` symmetric" for the messages."""
    parts = [f"`{names[index] if index < len(names) else f'input {index}'}` {structure}"
             for index, structure in enumerate(structures) if structure]
    return ", ".join(parts)


def note(structures: tuple[Optional[str], ...], names: list[str]) -> str:
    """What AGL901/AGL902's message adds when the inputs were structured."""
    if not any(structures):
        return ""
    return (f" (checked on the structured set: {describe(structures, names)}; gradcheck of forward "
            "composed with the projection onto that set, so a symmetrized or triangular gradient, or one "
            "defined up to a constant on a distribution, is judged along the set only)")


def symmetric_companions(inputs: tuple, structures: tuple[Optional[str], ...]) -> list[int]:
    """Plain square float matrices the size of a structured input (a ``middle`` beside a ``chol``)."""
    sizes = {inputs[index].shape[-1] for index, structure in enumerate(structures)
             if structure and structure != DISTRIBUTION and index < len(inputs)
             and isinstance(inputs[index], torch.Tensor)}
    return [index for index, value in enumerate(inputs)
            if (index >= len(structures) or not structures[index]) and isinstance(value, torch.Tensor)
            and value.is_floating_point() and value.requires_grad and value.dim() >= 2
            and value.shape[-1] == value.shape[-2] and value.shape[-1] in sizes]


def with_symmetric(make_inputs: Callable[[], tuple], indices: list[int]) -> Callable[[], tuple]:
    """``make_inputs`` with the inputs at ``indices`` symmetrized (leaves still), structures recorded."""
    structures = list(of(make_inputs))
    count = len(make_inputs())
    structures += [None] * (count - len(structures))
    for index in indices:
        structures[index] = SYMMETRIC

    def symmetrized() -> tuple:
        inputs = list(make_inputs())
        for index in indices:
            value = inputs[index].detach()
            inputs[index] = ((value + value.mT) / 2).requires_grad_(True)
        return tuple(inputs)

    symmetrized.structures = tuple(structures)  # type: ignore[attr-defined]
    return symmetrized
