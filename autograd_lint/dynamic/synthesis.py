"""Inputs guessed from forward's signature: a small search over shapes until forward runs.

Each parameter is first classified (a float tensor, an index tensor, a mask, a size, or a plain
value) from its annotation, default and name; then a few shape plans are tried for the float
tensors, each with values in [-1, 1) and then in [0.5, 2) (for forwards that need positive
inputs: log, sqrt). Index tensors are 1-D over the first dimension, then a column (N, 1) for
gather/scatter along dim 1; an ``Optional[Tensor]`` parameter is left out (None) once no tensor
for it worked. A parameter named like a size (``shape``, ``noise_shape``) is a tuple of ints,
the first tensor's shape first; one named like a callable (``fn``, ``act_fn``, ``sq_dist_func``)
gets a small one: the identity, or for a distance the elementwise (squared) difference, which
scales as the distance a kernel's backward assumes. The search stays small on purpose:
gradcheck's cost grows fast with the number of elements.

Every dimension of a plan's shapes has its own size, (2, 3, 4, 5) rather than (2, 3, 4, 4): on a
square input a backward that swaps height and width returns a gradient of the right shape and
passes gradcheck. Square plans come last, for the forwards that need them (a matrix inverse, an
``assert h == w``); call sites and declared examples keep their own shapes.

When no plan works, or forward runs only where backward raises or returns a gradient of another
shape than its input's, ``retry_candidates`` reads the errors (forward's, and backward's on such a
fallback), and reads them again as the second tries add theirs:

- a parameter guessed as a tensor that is really a size (``must be tuple of ints, not Tensor``),
  a callable (``'Tensor' object is not callable``) or an optional object is tried as an int, a
  tuple of ints, a small callable and None in turn;
- variants of the slots (``more_tries``): a plain value guessed from a name alone (``p``, a
  probability) that forward uses as a tensor (``'float' object is not subscriptable``) becomes a
  float tensor; the inputs forward refuses gradients for (gpytorch's kernels: "cannot compute
  gradients with respect to x1 and x2"; the ones the error names, else each in turn) are passed
  without requires_grad, and the checks judge the others only; a tensor that forward indexes
  with becomes an index tensor;
- a number guessed from a name alone that forward hands to ``save_for_backward`` ("can only save
  variables, but argument 1 is of type float") becomes a 0-d tensor without grad (a number that a
  default or a call site gives stays one: saving it is the AGL202 bug); a guessed tensor that
  forward reads with ``.item()`` ("cannot be converted to Scalar") becomes a 1-element tensor
  without grad, each in turn;
- shapes for the slots and each variant: a last dimension per tensor, the first two searched in
  pairs from 3 to 8 (pypose: a quaternion 4 acting on a point 3, an SE3 pose 7 on a twist 6),
  the sizes that the errors name first ("must have length 3", "got [3, 5] but expected shape
  compatible with [3, 4]"), a tensor whose last dimension is a Lie group's storage size drawn
  with a unit quaternion in it; and each tensor in turn as a column (3, 1) (a length scale that
  must broadcast).
- what the errors name outright comes first (``_targeted``): a dtype ("labels must be
  torch.int32", "expected scalar type Int": the index tensors and the tensors named like lengths
  in that dtype), then, on top of it, a rank ("not enough values to unpack (expected 4, got 2)",
  "must be 4D", "Dimension out of range ... but got 2": the float tensors with that many dimensions).
All of it stays within ``inputs.SEARCH_BUDGET_S``.

Forward's code fixes some shapes before any error (``read_ranks``): ``N, C, H, W = x.shape``
unpacks exactly four dimensions, ``x[:, :, None, :]`` indexes at least three (``ranked_shape``:
small, the last two sizes even and different, as forwards that halve need). A plain value that a
name alone suggested (``low``) is a tensor where forward fixes its rank so, or reads what only a
tensor has (``scale.device``, ``mu.detach()``: ``tensor_only_reads``). A guessed tensor that forward
uses where only a Python number fits is one (``counted_in_forward``: a dimension ``x.sum(d)``, a
count ``range(k)``, ``x[:k]``, a size ``x.view(-1, k)``, an int compared in a test, a clamp's
bounds). A tensor handed to a square-only op (``torch.linalg.solve``) puts the square plans first,
and a last size compared with a number (``assert x.shape[-1] == 3``) is that size (``read_shapes``);
a matrix product's error ("mat1 and mat2 shapes cannot be multiplied (3x4 and 6x4)") gives the
first input's last size (``_matrix_product_sized``). A
``grid`` beside an input is a sampling grid ``(B, *out, D)``, D the input's number of spatial
dimensions (a plan of its own, first), and a size parameter beside it (``shape``) the spatial size
(``Plan.size``), the input then also tried as what is pushed there, ``(B, C, *out)``.

Hyper-parameters stay Python numbers where something says so: a default, a name (``NAMED_VALUES``
and the patterns of ``named_value``: ``keep_prob``, ``drop_rate``, ``num_bits``), a number that the
user's call sites pass at that position (``callsites.plain_values``). A number of time steps
(``T``) is the first tensor's leading size. A value or a tensor's range moves into the domain
that the docstring states (``beta > 1``, ``0 < p < 1``: ``stated_domains``). A tensor guessed for
a parameter that nothing types, and for which backward returns None, is passed without grad
(``inputs.choose_inputs``).
"""

from __future__ import annotations

import ast
import enum
import inspect
import itertools
import re
import textwrap
import typing
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Optional

from autograd_lint.dynamic.candidate import Candidate
from autograd_lint.examples import TensorSpec

FLOAT, INDEX, MASK = "float tensor", "index tensor", "mask tensor"
LENGTHS = "segment lengths"  # an integer vector of segment lengths over the first tensor's rows
EDGES = "edge list"  # a graph's edges as a (2, E) integer tensor of the first tensor's rows (``edge_index``)
SHAPE = "shape"  # a tuple of ints, resolved per plan (``shape_value``)
MAX_VALUE_COMBINATIONS = 4


@dataclass(frozen=True)
class TorchDtype:
    """torch's dtype of this name, built by ``inputs.prepare`` (this module never imports torch)."""

    name: str = "float64"

    def __repr__(self) -> str:
        return f"torch.{self.name}"


@dataclass(frozen=True)
class NewDict:
    """An empty dict, a new one for each call (``inputs.prepare`` builds it): options a forward
    reads with ``.get(key, default)``."""

    def __repr__(self) -> str:
        return "{}"


@dataclass(frozen=True)
class SegmentLengths:
    """An int64 vector of these lengths (``inputs.prepare`` builds it)."""

    lengths: tuple[int, ...]
    dtype: str = "int64"

    def __repr__(self) -> str:
        return str(list(self.lengths))


@dataclass(frozen=True)
class RunDevice:
    """The device the checks run on, as a ``torch.device`` (``inputs.prepare`` builds it)."""

    def __repr__(self) -> str:
        return "the run's device"


@dataclass(frozen=True)
class BuiltObject:
    """An instance of one of the package's classes, which a parameter's annotation names, built
    from its constructor for each call (``objects.built``, through ``inputs.prepare``)."""

    klass: type

    def __repr__(self) -> str:
        name = self.klass.__name__
        if isinstance(self.klass, enum.EnumMeta):
            return f"{name}'s first member"
        if inspect.isabstract(self.klass):
            return f"a subclass of {name} built from its constructor"
        return f"{name}() from its constructor's defaults"


# Names that say "a plain value" and a value that works for most forwards that take them.
NAMED_VALUES: dict[str, tuple[Any, ...]] = {
    **dict.fromkeys(("dim", "axis"), (-1,)),
    **dict.fromkeys(("eps", "epsilon"), (1e-5,)),
    **dict.fromkeys(("training", "train", "is_training", "inplace", "keepdim", "keep_dim",
                     "transpose", "trans", "causal", "is_causal", "affine", "ceil_mode"), (False,)),
    # (not `k`: in attention code it is the key tensor)
    **dict.fromkeys(("topk", "top_k", "n", "num", "order"), (2,)),
    **dict.fromkeys(("groups", "num_groups", "stride", "dilation", "repeats", "times"), (1,)),
    **dict.fromkeys(("padding", "pad", "offset", "start", "seed"), (0,)),
    **dict.fromkeys(("kernel_size", "window", "window_size"), (3,)),
    **dict.fromkeys(("num_classes", "classes", "features", "num_features", "in_features", "out_features",
                     "hidden_size", "embed_dim", "size"), (4,)),
    **dict.fromkeys(("p", "alpha", "beta", "gamma", "scale", "lambd", "lambda_", "lam", "negative_slope",
                     "slope", "margin", "temperature", "temp", "tau", "factor", "coef", "coeff", "momentum",
                     "smoothing", "label_smoothing", "weight_decay", "rate", "ratio", "sigma", "mu", "value",
                     "constant", "c", "s", "lr", "threshold", "clip", "delta"), (0.5,)),
    **dict.fromkeys(("min", "min_val", "min_value", "lower", "low", "lo", "a_min"), (-0.5,)),
    **dict.fromkeys(("max", "max_val", "max_value", "upper", "high", "hi", "a_max"), (0.5,)),
    "reduction": ("mean",),
    # a dtype or a device passed on to `.to(...)`, `torch.empty(...)`: a tensor there is an error
    **dict.fromkeys(("dtype", "out_dtype", "compute_dtype", "output_dtype"), (TorchDtype(),)),
    "device": (RunDevice(),),
    "nu": (0.5,),  # a Matern kernel's smoothness (0.5, 1.5 or 2.5), a Student-t's degrees of freedom
}
INDEX_NAMES = frozenset({"index", "indices", "idx", "ids", "target", "targets", "label", "labels",
                         "perm", "permutation", "positions", "segment_ids", "offsets"})
MASK_NAMES = frozenset({"mask", "attn_mask", "attention_mask", "padding_mask", "key_padding_mask", "keep",
                        "valid", "valid_mask", "is_valid"})
CALLABLE_NAMES = re.compile(r"^(fn|func|function|f|module|callback|op|layer|net|model|closure|run_function)$")
WEIGHT_NAMES = frozenset({"weight", "weights", "kernel", "filters", "weight_t"})
BIAS_NAMES = frozenset({"bias", "bias_t", "biases"})

VALUE_RANGES = ((-1.0, 1.0), (0.5, 2.0))
# Tensors of sampling positions whose last size is the number of spatial dimensions of another.
_GRID_NAMES = re.compile(r"^(?:grid|sample_grid|sampling_grid|coords|coordinates|flow|deformation|displacement)$")


@dataclass(frozen=True)
class Slot:
    """What to pass for one forward parameter."""

    name: str
    kind: str  # FLOAT, INDEX, MASK, or "value"
    values: tuple[Any, ...] = ()  # alternatives for a "value" slot
    optional: bool = False  # a tensor annotated Optional[...]: None is tried when no tensor works
    no_grad: bool = False  # a tensor passed with requires_grad=False: forward refuses gradients for it
    guessed: bool = False  # a tensor only because nothing (annotation, name, default) said otherwise
    shape: Optional[tuple[int, ...]] = None  # a tensor of this shape whatever the plan (a 0-d scalar)
    domain: Optional[tuple[float, float]] = None  # the values the documentation allows (``stated_domains``)
    from_name: bool = False  # a plain value that the parameter's name alone suggested
    last: Optional[int] = None  # the last dimension's size that the class states (``stated_last_sizes``)
    rank: Optional[int] = None  # the number of dimensions forward unpacks from the shape (``read_ranks``)
    min_rank: Optional[int] = None  # at least this many dimensions: forward indexes that many (``read_ranks``)
    dtype: str = "int64"  # an index tensor's dtype (int32 where forward's error asks for it)
    square: bool = False  # forward hands it to an op that takes square matrices only (``square_in_forward``)


@dataclass
class Plan:
    name: str
    shape_of: Callable[[int, str], tuple[int, ...]]  # (index among float tensors, name) -> shape
    index_column: bool = False  # index tensors (N, 1), as gather/scatter along dim 1 need, not (N,)
    size: Optional[tuple[int, ...]] = None  # what a size parameter (``shape``) is in this plan, if not the first tensor's


def forward_parameters(cls: type) -> Optional[list[inspect.Parameter]]:
    """forward's parameters as ``apply`` sees them (without ``ctx`` in the legacy style)."""
    from torch.autograd.function import _is_setup_context_defined

    try:
        parameters = list(inspect.signature(cls.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    legacy = not _is_setup_context_defined(getattr(cls, "setup_context", None))
    # With setup_context, a first parameter named ctx is the AGL106 mistake, not an input: guess
    # for the inputs the author meant, so that apply raises the TypeError that shows the bug
    # (a tensor guessed for `ctx` would make forward run and backward look wrong).
    if parameters and (legacy or parameters[0].name == "ctx"):
        return parameters[1:]
    return parameters


def classify(parameter: inspect.Parameter) -> Optional[list[Slot]]:
    """The slot(s) for one parameter; None when nothing sensible can be passed."""
    name = parameter.name
    lower = name.lower()
    annotation = annotation_text(parameter.annotation)
    default = parameter.default
    has_default = default is not inspect.Parameter.empty
    if parameter.kind == inspect.Parameter.VAR_KEYWORD:
        return []
    if parameter.kind == inspect.Parameter.VAR_POSITIONAL:
        return [Slot(f"{name}[0]", FLOAT)]
    if parameter.kind == inspect.Parameter.KEYWORD_ONLY:
        return [] if has_default else None  # apply passes positionals only
    if _CALLABLE_ANNOTATION.match(annotation):
        # `f: Callable[[Tensor], Tensor]` names tensors, yet is a function: the stand-ins.
        return [Slot(name, "value", (_identity,))]
    if "tensor" in annotation and has_default and isinstance(default, (int, float)) and not isinstance(default, bool) \
            and re.search(r"\b(?:float|int)\b", annotation):
        # `factor: Tensor | float = 1e-12`: a number by default, as callers pass it (a tensor guessed
        # there requires grad, and the class means no gradient for it).
        return [Slot(name, "value", (default,))]
    if "tensor" in annotation:
        optional = bool(re.search(r"\boptional\b|\bnone\b", annotation))
        integers = _integer_slot(name, optional)
        if integers is not None:
            return integers
        if "long" in annotation:
            return [Slot(name, INDEX, optional=optional)]
        return [Slot(name, MASK if lower in MASK_NAMES else FLOAT, optional=optional)]
    if has_default and default is not None:
        return [Slot(name, "value", (default,))]
    named = named_value(name)
    if named is not None:
        return [Slot(name, LEADING, ()) if named == LEADING_SIZE else Slot(name, "value", named, from_name=True)]
    if has_default:  # `bias=None`, `out=None`: None is the documented "leave it out"
        return [Slot(name, FLOAT)] if lower in BIAS_NAMES | WEIGHT_NAMES else [Slot(name, "value", (None,))]
    numbers = _number_annotation(annotation)
    if numbers:  # `float | None`, `Optional[int]`, `Union[int, float]`: a number, or None last
        return [Slot(name, "value", numbers)]
    if annotation in ("int", "builtins.int"):
        return [Slot(name, "value", (2, 1))]
    if annotation in ("float", "builtins.float"):
        return [Slot(name, "value", (0.5,))]
    if annotation in ("bool", "builtins.bool"):
        return [Slot(name, "value", (False, True))]
    if re.fullmatch(r"(?:typing\.)?dict(?:\[.*\])?", annotation):  # `config: Dict`: options by key
        return [Slot(name, "value", (NewDict(),))]
    if re.fullmatch(r"(?:torch\.)?dtype", annotation):
        return [Slot(name, "value", (TorchDtype(),))]
    if _DEVICE_WORDS & set(_union_words(annotation)) and set(_union_words(annotation)) <= _DEVICE_WORDS | {"str"}:
        return [Slot(name, "value", (RunDevice(),))]  # `device: torch.device`, `str | torch.device`
    if CALLABLE_NAMES.match(lower) or "callable" in annotation:
        return [Slot(name, "value", (_identity,))]
    if annotation in ("str", "builtins.str"):
        return None
    integers = _integer_slot(name)
    if integers is not None:
        return integers
    if lower in MASK_NAMES:
        return [Slot(name, MASK)]
    return [Slot(name, FLOAT, guessed=True)]


def _integer_slot(name: str, optional: bool = False) -> Optional[list[Slot]]:
    """The integer tensor a name says: segment lengths, an edge list, an index; None for others."""
    lower = name.lower()
    if _LENGTH_NAMES.match(lower):
        return [Slot(name, LENGTHS, SEGMENTATIONS, optional=optional)]
    if _EDGE_NAMES.match(lower):
        return [Slot(name, EDGES, optional=optional)]
    if lower in INDEX_NAMES or _INDEX_SUFFIX.search(lower):
        return [Slot(name, INDEX, optional=optional)]
    return None


_NUMBER_WORDS = {"int": 2, "float": 0.5, "bool": False}
# The lengths of consecutive segments of a tensor's rows (`segment_reduce(x, "sum", lengths=...)`,
# `repeat_interleave(g, lengths)`): an int64 vector, as long as the first tensor has rows and summing
# to that number, so that both a reduction over the segments and an expansion to them fit. First
# uneven, one segment of two rows, then one each, the last empty (a backward that confuses segments
# shows), then a segment per row.
_LENGTH_NAMES = re.compile(r"^(?:lengths|lens|seg_?lengths|segment_?lengths|segment_?sizes|seg_?sizes)$")
SEGMENTATIONS = ("uneven", "one per row")
# `source_index`, `target_indices`, `batch_idx`, `token_ids`: indices too.
_INDEX_SUFFIX = re.compile(r"_(?:index|indices|idx|ids)$")
# A graph's edges, as graph libraries pass them: `edge_index[0]` the sources, `edge_index[1]` the
# targets, each a row of the node features (the first tensor).
_EDGE_NAMES = re.compile(r"^(?:edge_?index|edge_?indices|edges_?index)$")
# `Callable[...]`, `typing.Callable[...]`, `collections.abc.Callable`, `Optional[Callable[...]]`
_CALLABLE_ANNOTATION = re.compile(r"^(?:(?:typing\.)?optional\[)?(?:typing\.|collections\.abc\.)?callable\b")
_DEVICE_WORDS = {"device", "torch.device"}


def _union_words(annotation: str) -> list[str]:
    """The members of an annotation written as a union: ``str | torch.device`` -> both."""
    return [word.strip() for word in annotation.split("|")]


def _number_annotation(annotation: str) -> tuple[Any, ...]:
    """The values for an annotation that unites plain numbers and None (``float | None``,
    ``Optional[int]``), empty for any other (a single type is read on its own in ``classify``)."""
    found = re.findall(r"[a-z]+", annotation)
    words = [word for word in found if word not in ("optional", "union", "typing", "builtins")]
    if "optional" in found:
        words.append("none")
    if len(words) < 2 or not set(words) <= {*_NUMBER_WORDS, "none"}:
        return _number_or_sequence(annotation)
    values = tuple(dict.fromkeys(_NUMBER_WORDS[word] for word in words if word != "none"))
    return values + ((None,) if "none" in words else ())


def _number_or_sequence(annotation: str) -> tuple[Any, ...]:
    """The number for a union of a number and a sequence of them (``float | tuple[float, ...]``: a
    width per dimension, or one for all), read at the union's top level; empty for any other."""
    top = annotation
    while "[" in top:
        stripped = re.sub(r"\[[^\[\]]*\]", "", top)
        if stripped == top:
            break
        top = stripped
    members = [member.strip().removeprefix("typing.").removeprefix("builtins.") for member in top.split("|")]
    numbers = [member for member in members if member in _NUMBER_WORDS]
    if len(members) < 2 or not numbers or not set(members) <= {*_NUMBER_WORDS, "none", "tuple", "list", "sequence"}:
        return ()
    return tuple(dict.fromkeys(_NUMBER_WORDS[member] for member in numbers))


# Names of hyper-parameters beyond NAMED_VALUES: `keep_prob`, `drop_rate`, `spike_threshold` are
# Python numbers, and so is what a Function is told to count (`num_bits`, `n_levels`). A tensor
# guessed for them would require grad, and a backward that (rightly) returns None for them fails
# gradcheck: a false AGL901.
_FLOAT_HYPERPARAMETER = re.compile(
    r"(?:^|_)(?:prob|probability|rate|ratio|eps|epsilon|scale|factor|coef|coeff|momentum|thresh|threshold|"
    r"temperature|decay|margin|alpha|beta|gamma|lambda|lambd|sigma|tau|slope|p)$|^(?:keep|drop|dropout)_")
_INT_HYPERPARAMETER = re.compile(r"^(?:num|n)_[a-z]\w*$|(?:^|_)(?:bits|nbits|iters|iterations)$")
# The number of time steps of a sequence whose leading dimension is time (spiking networks:
# `forward(ctx, x_seq, T)`): it must equal the first tensor's leading size.
_TIME_STEPS = re.compile(r"^(?:T|time_steps|timesteps|num_steps|n_steps|n_timesteps|seq_len|T_steps)$")
LEADING = "leading size"  # an int: the first float tensor's leading size, resolved per plan
LEADING_SIZE = ("leading size",)


def named_value(name: str) -> Optional[tuple[Any, ...]]:
    """The plain values that a parameter's name alone says (NAMED_VALUES, then the hyper-parameter
    patterns); ``LEADING_SIZE`` for a number of time steps; None when the name says nothing."""
    if _TIME_STEPS.match(name):
        return LEADING_SIZE
    lower = name.lower()
    if lower in NAMED_VALUES:
        return NAMED_VALUES[lower]
    if _INT_HYPERPARAMETER.search(lower):
        return (2,)
    if _FLOAT_HYPERPARAMETER.search(lower):
        return (0.5,)
    return None


def annotation_text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation.lower()
    return getattr(annotation, "__name__", str(annotation)).lower() if isinstance(annotation, type) \
        else str(annotation).lower()


def plans(float_names: list[str], has_index: bool = False, has_size: bool = False,
          square_first: bool = False) -> list[Plan]:
    """Shape plans for the float tensors, most common first; only those that fit the names.
    ``square_first``: forward hands a tensor to an op that takes square matrices only
    (``torch.linalg.inv``, ``solve``, ``eigh``): the square plans first, the others after."""
    names = [name.lower() for name in float_names]
    has_weight = any(name in WEIGHT_NAMES for name in names)
    has_bias = any(name in BIAS_NAMES for name in names)
    same = Plan("same (3, 4)", lambda i, n: (3, 4))
    result = []
    grids = [name for name in names if _GRID_NAMES.search(name)]
    if grids and (len(names) > 1 or has_size):
        # A sampling grid (B, *out, D) beside an input (B, C, *spatial): D, the grid's last size, is
        # the input's number of spatial dimensions (grid_sample, spline interpolation, warps). A
        # size parameter beside it is the spatial size; then the input may be what is pushed
        # (splatted) there instead, (B, C, *out).
        for spatial in ((5, 6), (5,)):
            out = (4, 3)[:len(spatial)]
            grid_shape = (2, *out, len(spatial))
            result.append(Plan(f"sampling grid, {len(spatial)} spatial dimension(s)",
                               lambda i, n, spatial=spatial, grid_shape=grid_shape: grid_shape
                               if n in grids else (2, 3) + spatial, size=spatial))
            if has_size and len(names) > 1:
                result.append(Plan(f"sampling grid, pushed onto {len(spatial)} spatial dimension(s)",
                                   lambda i, n, out=out, grid_shape=grid_shape: grid_shape
                                   if n in grids else (2, 3) + out, size=spatial))
    if has_weight or has_bias:
        result.append(Plan("linear", lambda i, n: (5, 4) if n.lower() in WEIGHT_NAMES
                           else (5,) if n.lower() in BIAS_NAMES else (3, 4)))
    if has_bias:  # a bias is broadcast: same shapes would hide a wrong reduction in backward
        result.append(Plan("broadcast (3, 4) + (4,)", lambda i, n: (3, 4) if i == 0 else (4,)))
    result.append(same)
    if has_index:  # x.gather(1, target) with target (N, 1): the target log-probability of a loss
        result.append(Plan("same (3, 4), index column", lambda i, n: (3, 4), index_column=True))
    if len(names) > 1:
        result.append(Plan("matmul chain", lambda i, n: (3 + i, 4 + i)))
        if not has_bias:
            result.append(Plan("broadcast (3, 4) + (4,)", lambda i, n: (3, 4) if i == 0 else (4,)))
    result.append(Plan("same (2, 3, 4)", lambda i, n: (2, 3, 4)))
    result.append(Plan("same (4,)", lambda i, n: (4,)))
    if has_weight:
        result.append(Plan("conv2d", lambda i, n: (4, 3, 3, 2) if n.lower() in WEIGHT_NAMES
                           else (4,) if n.lower() in BIAS_NAMES else (2, 3, 5, 6)))
    if len(names) > 1:
        result.append(Plan("batched matmul chain", lambda i, n: (2, 3 + i, 4 + i)))
    result.append(Plan("scalars ()", lambda i, n: ()))
    result.append(Plan("same (2, 3, 4, 5)", lambda i, n: (2, 3, 4, 5)))
    # Square last: only for forwards that refuse every plan above.
    if has_weight:
        result.append(Plan("conv2d, square", lambda i, n: (4, 3, 3, 3) if n.lower() in WEIGHT_NAMES
                           else (4,) if n.lower() in BIAS_NAMES else (2, 3, 5, 5)))
    result.append(Plan("square (4, 4)", lambda i, n: (4, 4)))
    result.append(Plan("square (2, 3, 4, 4)", lambda i, n: (2, 3, 4, 4)))
    if square_first:
        result.sort(key=lambda plan: "square" not in plan.name)  # stable: each group keeps its order
    return result


def candidates(cls: type, plain_values: Optional[dict[int, Any]] = None) -> Iterator[Candidate]:
    """``plain_values``: the Python numbers that the user's call sites pass, by position
    (``callsites.plain_values``): those parameters stay numbers."""
    slots = class_slots(cls, plain_values)
    if slots is None:
        return  # a parameter we cannot invent (a string): give up early
    yield from candidates_for(slots)
    if any(slot.optional for slot in slots):
        # Optional[Tensor] parameters left out (None), once no tensor for them worked.
        yield from candidates_for([Slot(slot.name, "value", (None,)) if slot.optional else slot for slot in slots])


def class_slots(cls: type, plain_values: Optional[dict[int, Any]] = None) -> Optional[list[Slot]]:
    """forward's slots, with the call sites' plain numbers and the documented domains applied."""
    parameters = forward_parameters(cls)
    return None if parameters is None else code_slots(cls, parameters, plain_values)


def code_slots(owner: Any, parameters: list[inspect.Parameter],
               plain_values: Optional[dict[int, Any]] = None) -> Optional[list[Slot]]:
    """The slots of ``parameters``, read with the docstrings and the code of ``owner.forward``
    (a Function class, or ``callers.Caller`` for a function that calls ``apply``)."""
    slots = slots_for(parameters, plain_values)
    if slots is None:
        return None
    hints = plain_value_hints(owner)
    slots = [Slot(slot.name, "value", hints[slot.name]) if slot.kind == FLOAT and slot.guessed and slot.name in hints
             else slot for slot in slots]
    for position, value in (plain_values or {}).items():
        if position >= len(slots):
            continue
        slot = slots[position]
        if slot.kind == FLOAT and (slot.guessed or not isinstance(value, (int, float))):
            slots[position] = Slot(slot.name, "value", (value,))
        elif slot.kind == "value":  # the user's own number first, then the name's guess
            slots[position] = replace(slot, values=(value, *[other for other in slot.values if other != value]),
                                      from_name=False)
    slots = annotated_objects(owner, parameters, slots)
    slots = unpacked_star_arguments(owner, parameters, slots)
    slots = read_from_forward(owner, slots)
    slots = stated_shapes(owner, slots)
    slots = stated_domains(owner, read_ranks(owner, _values_used_as_tensors(owner, slots)))
    return stated_last_sizes(owner, read_shapes(owner, slots))


def unpacked_star_arguments(owner: Any, parameters: list[inspect.Parameter], slots: list[Slot]) -> list[Slot]:
    """A ``*args`` that forward unpacks (``x, w, b, k = args``) is that many arguments, each
    classified by its name as a parameter would be, not the one tensor guessed for it."""
    star = next((parameter.name for parameter in parameters if parameter.kind == inspect.Parameter.VAR_POSITIONAL), None)
    function = forward_function(owner) if star is not None else None
    if function is None:
        return slots
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                and isinstance(node.value, ast.Name) and node.value.id == star \
                and all(isinstance(element, ast.Name) for element in node.targets[0].elts):
            unpacked: list[Slot] = []
            for element in node.targets[0].elts:
                classified = classify(inspect.Parameter(element.id, inspect.Parameter.POSITIONAL_OR_KEYWORD))
                if classified is None:
                    return slots
                unpacked.extend(classified)
            position = next((index for index, slot in enumerate(slots) if slot.name == f"{star}[0]"), None)
            return slots if position is None else [*slots[:position], *unpacked, *slots[position + 1:]]
    return slots


def annotated_objects(owner: Any, parameters: list[inspect.Parameter], slots: list[Slot]) -> list[Slot]:
    """A guessed tensor whose parameter is annotated with one of the package's classes (``system:
    ChargeSystem``, ``mode: Mode``) is an object of that class (``BuiltObject``): no tensor stands in
    for what forward reads of it."""
    function = getattr(owner, "forward", None)
    classes = {parameter.name: annotated_class(function, parameter) for parameter in parameters}
    return [Slot(slot.name, "value", (BuiltObject(classes[slot.name]),))
            if slot.kind == FLOAT and slot.guessed and classes.get(slot.name) is not None else slot
            for slot in slots]


# Modules whose classes are not a package's objects: builtins, the standard library's types, torch's,
# NumPy's (a dtype and a device are read elsewhere; a tensor is synthesized).
_FOREIGN_MODULES = re.compile(r"^(?:builtins|typing|types|collections|abc|numbers|enum|torch|numpy)(?:\.|$)")
# An annotation written as text (``from __future__ import annotations``) is read only when it is
# made of names, dots, brackets, commas and unions: never run as other code.
_ANNOTATION_TEXT = re.compile(r"^[\w.\[\], |]+$")


def own_class(klass: Any) -> bool:
    """Whether ``klass`` is a class that a package defines: not a builtin, typing's, torch's or
    NumPy's, not an exception, a tensor subclass or a Function class (by their bases' modules:
    this module does not import torch)."""
    if not isinstance(klass, type) or issubclass(klass, BaseException) \
            or _FOREIGN_MODULES.match(getattr(klass, "__module__", None) or "builtins"):
        return False
    return not any(getattr(base, "__module__", "").startswith("torch") and base.__name__ in ("Tensor", "Function")
                   for base in klass.__mro__)


def annotated_class(function: Any, parameter: inspect.Parameter) -> Optional[type]:
    """The package's class that ``parameter``'s annotation names (the first such member of an
    ``Optional`` or a union), resolved in ``function``'s module; None for any other annotation."""
    annotation = parameter.annotation
    if annotation is inspect.Parameter.empty or function is None:
        return None
    if isinstance(annotation, str):
        namespace = getattr(inspect.unwrap(getattr(function, "__func__", function)), "__globals__", None)
        if namespace is None or not _ANNOTATION_TEXT.match(annotation):
            return None
        try:
            annotation = eval(annotation, dict(namespace))  # noqa: S307 - names and subscripts only
        except Exception:  # noqa: BLE001 - a name the module imports only for type checkers
            return None
    for member in (annotation, *typing.get_args(annotation)):
        if own_class(member):
            return member
    return None


def slots_for(parameters: list[inspect.Parameter], plain_values: Optional[dict[int, Any]] = None) -> Optional[list[Slot]]:
    """Every parameter's slots (``named_slot`` first, then ``classify``); None when one has none
    and no call site gives it a plain value (a string option)."""
    slots: list[Slot] = []
    for position, parameter in enumerate(parameters):
        classified = named_slot(parameter) or classify(parameter)
        if classified is None and position in (plain_values or {}):
            classified = [Slot(parameter.name, "value", (plain_values[position],))]
        if classified is None:
            return None
        slots.extend(classified)
    return slots


def candidates_for(slots: list[Slot]) -> Iterator[Candidate]:
    float_names = [slot.name for slot in slots if slot.kind == FLOAT and slot.shape is None]
    has_index = any(slot.kind == INDEX for slot in slots)
    value_choices = _value_choices(slots)
    guessed = _guessed_positions(slots)
    has_size = any(slot.kind == SHAPE for slot in slots)
    square_first = any(slot.square for slot in slots if slot.kind == FLOAT)
    planned = plans(float_names, has_index, has_size, square_first) if float_names else \
        [Plan("no float tensor", lambda i, n: ())]
    for plan in planned:
        for values in value_choices:
            for low, high in VALUE_RANGES:
                specs, detail = _arguments(slots, plan, values, low, high)
                yield Candidate("synthesized", f"{plan.name}: {detail}", _recipe(specs), guessed)


def _guessed_positions(slots: list[Slot]) -> tuple[int, ...]:
    """The arguments that are tensors only because nothing said otherwise (``Slot.guessed``)."""
    return tuple(index for index, slot in enumerate(slots) if slot.kind == FLOAT and slot.guessed)


def _arguments(slots: list[Slot], plan: Plan, values: tuple, low: float, high: float) -> tuple[list, str]:
    arguments: list[Any] = []
    described = []
    value_iter = iter(values)
    float_index = 0
    first_shape: Optional[tuple[int, ...]] = None
    first_float = next((slot.name for slot in slots if slot.kind == FLOAT), None)
    first_planned = next((slot.name for slot in slots if slot.kind == FLOAT and slot.shape is None), None)
    for slot in slots:
        if slot.kind == FLOAT:
            if slot.shape is not None:  # a fixed shape (a 0-d scalar): not one of the plan's tensors
                shape = slot.shape
            else:
                shape = plan.shape_of(float_index, slot.name)
                square = len(shape) >= 2 and shape[-1] == shape[-2]  # a square plan stays square
                if slot.rank is not None and len(shape) != slot.rank:
                    shape = ranked_shape(slot.rank, square)
                elif slot.min_rank is not None and len(shape) < slot.min_rank:
                    shape = ranked_shape(slot.min_rank, square)
                if slot.last is not None:
                    shape = (*shape[:-1], slot.last) if shape else (slot.last,)
                first_shape = shape if first_shape is None else first_shape
                float_index += 1
            slot_low, slot_high = slot.domain or (low, high)
            arguments.append(TensorSpec(shape, low=slot_low, high=slot_high,
                                        requires_grad=False if slot.no_grad else None))
            described.append(f"{slot.name} {shape}" + (" without grad" if slot.no_grad else "")
                             + ("" if not slot.domain else f" = {slot_low:g}" if slot_low == slot_high
                                else f" in [{slot_low:g}, {slot_high:g})"))
        elif slot.kind == LEADING:
            like = first_shape or (plan.shape_of(0, first_planned) if first_planned else ())
            value = like[0] if like else 2
            arguments.append(value)
            described.append(f"{slot.name}={value!r} (the leading size)")
        elif slot.kind == SHAPE:
            like = plan.size or first_shape or (plan.shape_of(0, first_float) if first_float else (3, 4))
            value = shape_value(next(value_iter), like)
            arguments.append(value)
            described.append(f"{slot.name}={value!r}")
        elif slot.kind == LENGTHS:
            like = first_shape or (plan.shape_of(0, first_float) if first_float else (3, 4))
            rows = like[0] if like else 3
            lengths = (2, *[1] * (rows - 2), 0) if next(value_iter) == "uneven" and rows >= 2 else (1,) * rows
            arguments.append(SegmentLengths(lengths, slot.dtype))
            described.append(f"{slot.name}={list(lengths)}" + ("" if slot.dtype == "int64" else f" {slot.dtype}"))
        elif slot.kind == EDGES:
            rows = (first_shape or (plan.shape_of(0, first_float) if first_float else (3, 4)) or (3,))[0]
            shape = (2, 2 * rows)  # more edges than nodes: some node gathers from two
            arguments.append(TensorSpec(shape, dtype=slot.dtype, low=0, high=rows))
            described.append(f"{slot.name} {shape} {slot.dtype} (edges between the {rows} rows)")
        elif slot.kind == INDEX:
            # 1-D over the first dimension, values valid as a row index and as a class index.
            base = first_shape or (3, 4)
            size = base[0] if base else 3
            shape = (size, 1) if plan.index_column else (size,)
            arguments.append(TensorSpec(shape, dtype=slot.dtype, low=0, high=max(1, min(base or (3,)))))
            described.append(f"{slot.name} {shape} {slot.dtype}")
        elif slot.kind == MASK:
            # A flag (`converged`) is set: a class may return NaN where it is not, on purpose.
            filled = slot.values[0] if slot.values else None
            arguments.append(TensorSpec(first_shape or (3, 4), dtype="bool", low=None if filled is None else float(filled)))
            described.append(f"{slot.name} mask" if filled is None else f"{slot.name} mask, all {filled}")
        else:
            value = next(value_iter)
            arguments.append(value)
            described.append(f"{slot.name}={value!r}")
    if low > 0:
        described.append(f"values in [{low:g}, {high:g})")
    return arguments, ", ".join(described)


def _recipe(arguments: list) -> Callable[[], tuple]:
    frozen = tuple(arguments)
    return lambda: frozen



# --- second tries, from forward's errors ---------------------------------------------------------

MAX_RETRIED_SLOTS = 4


class _Identity:
    """The small callable tried for a parameter that forward calls (shown as ``identity``). It
    answers as a parameterless module does too (``f.forward(x)``, ``f.parameters()``), since
    what forward calls is often a module (a reversible block's halves)."""

    def __call__(self, *arguments: Any, **keywords: Any) -> Any:
        return arguments[0] if arguments else None

    def forward(self, *arguments: Any, **keywords: Any) -> Any:
        return self(*arguments, **keywords)

    def parameters(self, recurse: bool = True) -> Iterator[Any]:
        return iter(())

    def __repr__(self) -> str:
        return "identity"


_identity = _Identity()


class _Mixing(_Identity):
    """The second stand-in callable, tried where backward differentiated the identity for an
    argument it ignores ("appears to not have been used in the graph": a fixed point's ``f(z, x)``,
    dz/dx): half the tanh of each tensor argument, summed (those that broadcast with the first).
    It depends on every tensor it is given, is a contraction in the first (a fixed-point
    iteration settles) and increasing (a bisection finds its root)."""

    def __call__(self, *arguments: Any, **keywords: Any) -> Any:
        tensors = [value for value in arguments if hasattr(value, "tanh") and hasattr(value, "shape")]
        if not tensors:
            return arguments[0] if arguments else None
        mixed = tensors[0].tanh() * 0.5
        for other in tensors[1:]:
            try:
                mixed = mixed + other.tanh() * 0.5
            except RuntimeError:  # a tensor that does not broadcast with the first: left out
                continue
        return mixed

    def __repr__(self) -> str:
        return "tanh mixing"


_mixing = _Mixing()


def is_stand_in(value: Any) -> bool:
    """Whether ``value`` is one of the stand-in callables (the identity, the tanh mixing)."""
    return isinstance(value, _Identity)


# Error text -> what the parameter guessed as a tensor should be instead, most likely first.
_WANTS = (
    (re.compile(r"not callable|is not a callable|callable"), (_identity,)),
    (re.compile(r"tuple of ints|sequence of ints|Expected a value of type 'List\[int\]'|size must be|"
                r"argument 'size'|argument 'shape'|argument 'dims?'"), ((3, 4), (-1,), 2)),
    (re.compile(r"an integer|of type 'int'|must be int|'int'|only integer|cannot be interpreted as an integer|"
                r"range\(\)|slice indices"), (2, (3, 4))),
)
_ANY_VALUE = (2, (3, 4), (-1,), None, _identity)
_SHAPE_TROUBLE = re.compile(r"size|shape|dimension|dim |must match|broadcast|expected .* last", re.IGNORECASE)


def retry_candidates(cls: type, errors: list[str], plain_values: Optional[dict[int, Any]] = None) -> Iterator[Candidate]:
    """Second tries once every plan failed, chosen from forward's ``errors``."""
    parameters = forward_parameters(cls)
    slots = class_slots(cls, plain_values)
    if parameters is None or slots is None:
        return
    text = " ".join(errors)
    values = next((wanted for pattern, wanted in _WANTS if pattern.search(text)), _ANY_VALUE)
    values = values + tuple(value for value in _ANY_VALUE if value not in values)
    # What the errors name outright first: a dtype ("labels must be torch.int32"), a rank ("not
    # enough values to unpack (expected 4, got 2)").
    for variant in _targeted(parameters, slots, errors):
        yield from itertools.islice(candidates_for(variant), 6)
    # (A tensor whose rank or last size forward's code reads is one for sure: not retried as a value.)
    guessed = [index for index, slot in enumerate(slots) if slot.kind == FLOAT and _guessed_tensor(parameters, slot)
               and slot.rank is None and slot.min_rank is None and slot.last is None]
    floats = sum(slot.kind == FLOAT for slot in slots)
    for index in guessed[:MAX_RETRIED_SLOTS] if floats > 1 else ():  # a tensor must be left to check
        for value in values:
            changed = list(slots)
            changed[index] = Slot(slots[index].name, "value", (value,))
            yield from itertools.islice(candidates_for(changed), 6)  # the first plans, both value ranges
    yield from more_tries(parameters, slots, errors)


def _guessed_tensor(parameters: list[inspect.Parameter], slot: Slot) -> bool:
    """A float tensor by default only (no annotation says so, the name is not a weight's)."""
    parameter = next((p for p in parameters if p.name == slot.name), None)
    if parameter is None:  # a name forward unpacks from `*args` (``unpacked_star_arguments``)
        return slot.guessed
    return "tensor" not in annotation_text(parameter.annotation) and parameter.name.lower() not in WEIGHT_NAMES | BIAS_NAMES


def _value_choices(slots: list[Slot]) -> list[tuple]:
    return list(itertools.islice(
        itertools.product(*[slot.values for slot in slots if slot.kind in ("value", SHAPE, LENGTHS)]),
        MAX_VALUE_COMBINATIONS))


# --- parameters named like sizes and callables ----------------------------------------------------

_SIZE_NAME = re.compile(r"^(shape|size|sizes)$|_(shape|size|sizes)$")
_SIZE_ANNOTATION = re.compile(r"tuple|list|sequence|size")
_CALLABLE_SUFFIX = re.compile(r"_(fn|func|function|callable|callback)$")


class _ShapeOf:
    """A size read off the plan: the first float tensor's shape, or that shape flattened."""

    def __init__(self, flattened: bool) -> None:
        self.flattened = flattened

    def __repr__(self) -> str:
        return "(-1,)" if self.flattened else "the first tensor's shape"


SAME_SHAPE, FLATTENED = _ShapeOf(False), _ShapeOf(True)


def shape_value(token: Any, like: tuple[int, ...]) -> Any:
    """A SHAPE slot's value in a plan whose first float tensor has shape ``like``."""
    if isinstance(token, _ShapeOf):
        return (-1,) if token.flattened else tuple(like)
    return token


class _Difference:
    """The callable tried for a parameter named like a distance (``dist_func``, ``sq_dist_fn``):
    the elementwise (squared) difference of two tensors. A kernel's backward assumes what its
    distance scales like (a squared distance twice as fast as a distance, in a length scale):
    ``identity`` for ``sq_dist_func`` would make a correct backward fail gradcheck."""

    def __init__(self, squared: bool) -> None:
        self.squared = squared

    def __call__(self, first: Any, second: Any = None, *arguments: Any, **keywords: Any) -> Any:
        difference = first if second is None else first - second
        return difference * difference if self.squared else abs(difference)

    def __repr__(self) -> str:
        return "squared difference" if self.squared else "absolute difference"


def _callables_for(lower: str) -> tuple[Any, ...]:
    if "dist" in lower:
        return (_Difference("sq" in lower), _identity)
    return (_identity,)


def named_slot(parameter: inspect.Parameter) -> Optional[list[Slot]]:
    """Slots that a parameter's name alone says and ``classify`` does not know: a size (``shape``,
    ``noise_shape``: a tuple of ints, the first tensor's shape first) and a callable named by its
    suffix (``sq_dist_func``, ``event_fn``). None: ``classify`` decides. A default or an annotation
    other than a tuple's says more than the name, and wins."""
    if parameter.kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) \
            or parameter.default is not inspect.Parameter.empty:
        return None
    lower = parameter.name.lower()
    annotation = annotation_text(parameter.annotation)
    # `kernel_size`, `hidden_size` are ints (NAMED_VALUES); a bare `size` is more often a shape.
    if _SIZE_NAME.search(lower) and (lower not in NAMED_VALUES or lower == "size") \
            and (not annotation or (_SIZE_ANNOTATION.search(annotation) and "tensor" not in annotation)):
        # `chunk_size`, `batch_size`, `block_size` are ints more often than not: 2 is tried next.
        others = NAMED_VALUES.get(lower) or ((2,) if lower.endswith("_size") else (FLATTENED,))
        return [Slot(parameter.name, SHAPE, (SAME_SHAPE, *others))]
    if _CALLABLE_SUFFIX.search(lower) and not annotation:
        return [Slot(parameter.name, "value", _callables_for(lower))]
    return None


# --- more second tries: tensors for values, inputs without grad, sizes per tensor ----------------

# forward used a plain value guessed from its name (`p` as a probability) as a tensor, or backward
# returned a gradient for it (autograd: "... but the corresponding forward input was not a Variable").
_FLOAT_REFUSED = re.compile(r"'float' object|\bnot float\b|forward input was not a Variable")
# forward refuses gradients for some inputs (gpytorch's kernels: "cannot compute gradients with
# respect to x1 and x2", checked through ctx.needs_input_grad).
_GRAD_REFUSED = re.compile(r"gradients? (?:with respect to|w\.r\.t)|does not require grad|requires_grad|"
                           r"requires grad|needs_input_grad", re.IGNORECASE)
# forward indexes with a tensor guessed as a float one (pyro's mixture samplers: `which`).
_INDEX_WANTED = re.compile(r"indices must be long|dtype int(?:32|64)(?:/int64)? for index|"
                           r"index .*(?:must|should) be .*(?:int|long)", re.IGNORECASE)
# save_for_backward given a Python number: it takes tensors only (a 0-d tensor works).
_SAVE_REFUSED_VALUE = re.compile(r"save_for_backward can only save variables, but argument \d+ is of type "
                                 r"(?:float|int)")
# `.item()` (or float()) on a tensor of several elements: forward reads a scalar from it.
_ITEM_REFUSED = re.compile(r"cannot be converted to Scalar|only one element tensors can be converted|"
                           r"Boolean value of Tensor with more than one value is ambiguous")
# Sizes that forward's and autograd's errors ask for, as the last dimension of some input.
_WANTED_SIZE = (
    re.compile(r"to be: \[(?:\d+, )*(\d+)\]"),  # bmm: "... of batch2 tensor to be: [3, 3] but got: [3, 4]"
    re.compile(r"size of tensor [ab] \((\d+)\)"),  # "The size of tensor a (0) must match the size of tensor b (3)"
    re.compile(r"must have length (\d+)"),  # linalg.cross: "inputs dimension -1 must have length 3"
    re.compile(r"got \[(?:\d+, )*(\d+)\] but expected shape compatible"),  # backward's idea of the input
    re.compile(r"(?:should|must) be (?:of size |of length )?(\d+)\b"),  # "Last dim should be 3"
)
LAST_SIZES = (3, 4, 5, 6, 7, 8)  # Lie groups: a point 3, a quaternion 4, an SE3 pose 7, Sim3 8
MAX_WANTED_SIZES = 4


def more_tries(parameters: list[inspect.Parameter], slots: list[Slot], errors: list[str]) -> Iterator[Candidate]:
    """Variants of the slots that forward's errors ask for, each with shapes of its own.

    - a plain value guessed from the parameter's name that forward uses as a tensor (``'float'
      object is not subscriptable``) becomes a float tensor;
    - a flag guessed one way that an error names (``training=False``: "Provide training=True if
      using backward") is set the other way;
    - inputs that forward refuses gradients for (its error names them, or else each in turn)
      are passed without requires_grad: the checks then judge the other inputs only;
    - for the slots as they are and for each variant: one tensor as a column (3, 1) (a length
      scale that must broadcast), then a last dimension per tensor, the first two tensors' sizes
      searched in pairs (pypose: a quaternion 4 acting on a point 3), sizes the errors name first.

    ``errors`` grows while the candidates are tried: each step reads what the earlier ones raised.
    """
    variants: list[tuple[list[Slot], bool]] = []  # (slots, whether to search sizes first)
    text = " ".join(errors)
    as_tensors = _values_as_tensors(parameters, slots)
    if _FLOAT_REFUSED.search(text) and as_tensors is not None:
        variants.append((as_tensors, True))  # nothing says the new tensor's size: search it first
    refusals = " ".join(error for error in errors if _GRAD_REFUSED.search(error))
    if refusals:
        # Refused for the only tensor: the differentiable input may be a value guessed by its name
        # (`scale`), as a tensor.
        variants.extend((variant, False) for variant in itertools.chain(
            _without_grad(slots, refusals), _without_grad(as_tensors or [], refusals)))
    variants.extend((variant, False) for variant in _flags_named_in(slots, text))
    if _UNUSED_IN_GRAPH.search(text):
        mixing = _with_mixing_stand_ins(slots)
        if mixing is not None:
            variants.insert(0, (mixing, False))
    if _INDEX_WANTED.search(text):
        variants.extend((variant, False) for variant in _as_index(parameters, slots))
    if _SAVE_REFUSED_VALUE.search(text):
        variants.extend((variant, False) for variant in _values_as_scalars(slots))
    if _ITEM_REFUSED.search(text):
        variants.extend((variant, False) for variant in _as_single_elements(slots))
    if _SHAPE_TROUBLE.search(" ".join(errors)):
        yield from _last_size_candidates(slots, errors)
    yield from _column_candidates(slots)
    for variant, sizes_first in variants:
        start = len(errors)
        if sizes_first:
            yield from _last_size_candidates(variant, errors)
        yield from itertools.islice(candidates_for(variant), 6)  # the first plans, both value ranges
        yield from _column_candidates(variant)
        if not sizes_first and _SHAPE_TROUBLE.search(" ".join(errors[start:])):  # what this variant raised
            yield from _last_size_candidates(variant, errors)


# Backward differentiated what a stand-in callable returned for an argument it ignores (the
# identity's f(z, x) does not depend on x).
_UNUSED_IN_GRAPH = re.compile(r"appears to not have been used in the graph")


def _flags_named_in(slots: list[Slot], text: str) -> Iterator[list[Slot]]:
    """A flag guessed one way (``training=False``) that an error names ("Provide training=True if
    using backward"), set the other way: one variant per flag named."""
    for position, slot in enumerate(slots):
        if slot.kind == "value" and len(slot.values) == 1 and isinstance(slot.values[0], bool) \
                and re.search(rf"(?<![\w.]){re.escape(slot.name)}\b", text):
            yield [*slots[:position], replace(slot, values=(not slot.values[0],)), *slots[position + 1:]]


def _with_mixing_stand_ins(slots: list[Slot]) -> Optional[list[Slot]]:
    """The slots with the mixing stand-in where the identity was the callable; None where none was."""
    if not any(value is _identity for slot in slots if slot.kind == "value" for value in slot.values):
        return None
    return [replace(slot, values=tuple(_mixing if value is _identity else value for value in slot.values))
            if slot.kind == "value" else slot for slot in slots]


def _values_as_scalars(slots: list[Slot]) -> Iterator[list[Slot]]:
    """The slots with every number guessed from a name alone as a 0-d tensor without grad, then
    each in turn: save_for_backward takes tensors only, so a `scale` that forward saves is a tensor
    in real use. A number that a default or a call site gives stays one: saving it is the AGL202
    bug, and PyTorch's error is the evidence."""
    numbers = [slot.name for slot in slots if slot.kind == "value" and slot.from_name and slot.values
               and isinstance(slot.values[0], (int, float)) and not isinstance(slot.values[0], bool)]
    groups = [set(numbers)] + ([{name} for name in numbers] if len(numbers) > 1 else [])
    for group in groups:
        if group:
            yield [replace(slot, kind=FLOAT, values=(), shape=(), no_grad=True,
                           domain=(float(slot.values[0]), float(slot.values[0])))
                   if slot.name in group else slot for slot in slots]


def _as_single_elements(slots: list[Slot]) -> Iterator[list[Slot]]:
    """The slots with one guessed float tensor as a 1-element tensor without grad, each in turn,
    while another float tensor is left to check: forward reads it with ``.item()``."""
    floats = [slot for slot in slots if slot.kind == FLOAT and slot.shape is None]
    for target in floats if len(floats) > 1 else ():
        if target.guessed:
            yield [replace(slot, shape=(1,), no_grad=True) if slot is target else slot for slot in slots]
            # A flag read with `.item()` (`if singular.item(): raise ...`): a random value is true.
            yield [replace(slot, shape=(1,), no_grad=True, domain=(0.0, 0.0)) if slot is target else slot
                   for slot in slots]


def _values_as_tensors(parameters: list[inspect.Parameter], slots: list[Slot]) -> Optional[list[Slot]]:
    """The slots with each plain float guessed from a name alone (no default, no annotation) as a
    float tensor; None when there is none."""
    guessed = {parameter.name for parameter in parameters
               if parameter.default is inspect.Parameter.empty and parameter.annotation is inspect.Parameter.empty
               and isinstance((named_value(parameter.name) or (None,))[0], float)}
    if not any(slot.kind == "value" and slot.name in guessed for slot in slots):
        return None
    return [replace(slot, kind=FLOAT, values=()) if slot.kind == "value" and slot.name in guessed else slot
            for slot in slots]


def _without_grad(slots: list[Slot], text: str) -> Iterator[list[Slot]]:
    """The slots with the float tensors that ``text`` names passed without grad; when it names
    none, each float tensor in turn. At least one tensor keeps requiring grad: it is what the
    checks judge."""
    floats = [slot.name for slot in slots if slot.kind == FLOAT]
    named = {name for name in floats if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text)}
    groups = [named] if named else [{name} for name in floats]
    for group in groups:
        if group and len(group) < len(floats):
            yield [replace(slot, no_grad=True) if slot.name in group else slot for slot in slots]


def _as_index(parameters: list[inspect.Parameter], slots: list[Slot]) -> Iterator[list[Slot]]:
    """The slots with one float tensor guessed from no annotation as an index tensor, each in turn,
    while another float tensor is left to check."""
    floats = [slot for slot in slots if slot.kind == FLOAT]
    guessed = [slot.name for slot in floats if _guessed_tensor(parameters, slot)]
    for name in guessed if len(floats) > 1 else ():
        yield [replace(slot, kind=INDEX) if slot.name == name else slot for slot in slots]


def _column_candidates(slots: list[Slot]) -> Iterator[Candidate]:
    """Each float tensor in turn as a column (3, 1), the others (3, 4): a per-row scale that
    forward requires to broadcast ("cannot handle multiple lengthscales")."""
    floats = [slot.name for slot in slots if slot.kind == FLOAT and slot.shape is None]
    if len(floats) < 2:
        return
    for column in floats:
        plan = Plan(f"{column} a column", lambda i, n, column=column: (3, 1) if n == column else (3, 4))
        yield from _plan_candidates(slots, plan)


def _last_size_candidates(slots: list[Slot], errors: list[str]) -> Iterator[Candidate]:
    """A last dimension per tensor: one tensor over the sizes, two in pairs (the same size first,
    then the pairs of different sizes; any further tensor takes the second one's), (2, size) each."""
    floats = [slot.name for slot in slots if slot.kind == FLOAT and slot.shape is None]
    if not floats:
        return
    sizes = list(dict.fromkeys(wanted_sizes(errors) + list(LAST_SIZES)))
    if len(floats) == 1:
        pairs = [(size, size) for size in sizes]
    else:
        pairs = [(size, size) for size in sizes] + [(a, b) for a in sizes for b in sizes if a != b]
    for first, second in pairs:
        plan = Plan(f"last dimension {first}" if first == second or len(floats) == 1 else
                    f"last dimensions {first}, {second}",
                    lambda i, n, first=first, second=second: (2, first) if i == 0 else (2, second))
        yield from _plan_candidates(slots, plan, group_elements=True)


def _plan_candidates(slots: list[Slot], plan: Plan, group_elements: bool = False) -> Iterator[Candidate]:
    """One plan, the first choice of plain values, both value ranges (``group_elements``: with
    ``_as_group_elements``)."""
    values = next(iter(_value_choices(slots)), ())
    for low, high in VALUE_RANGES:
        specs, detail = _arguments(slots, plan, values, low, high)
        if group_elements:
            recipe, note = _as_group_elements(slots, specs)
            yield Candidate("synthesized", f"{plan.name}: {detail}{note}", recipe, _guessed_positions(slots))
        else:
            yield Candidate("synthesized", f"{plan.name}: {detail}", _recipe(specs), _guessed_positions(slots))


# Where a Lie group element stored in the usual layout keeps its unit quaternion, by the last
# dimension: SO3 (q), RxSO3 (q, s), SE3 (t, q), Sim3 (t, q, s), as pypose (and lietorch) store them.
QUATERNION_AT = {4: 0, 5: 0, 7: 3, 8: 3}


@dataclass(frozen=True)
class UnitQuaternionAt:
    """A float tensor drawn as ``spec`` says, then with its slice [..., start:start + 4] scaled to
    unit norm (``inputs.prepare`` builds it)."""

    spec: TensorSpec
    start: int


def _as_group_elements(slots: list[Slot], specs: list) -> tuple[Callable[[], tuple], str]:
    """The arguments with each float tensor that requires grad and has a group's last dimension
    holding a unit quaternion at its place (the rest drawn as usual). Off the manifold a Lie
    group op's backward, written for group elements, is wrong for its other inputs too (pypose's
    `SO3_Act`: the gradient for the point is the rotation matrix of a unit quaternion), and
    gradcheck would blame a correct formula. For any other forward it is one more draw in the range."""
    where = [index for index, spec in enumerate(specs) if isinstance(spec, TensorSpec) and spec.is_floating
             and spec.wants_grad and spec.shape and spec.shape[-1] in QUATERNION_AT]
    arguments = [UnitQuaternionAt(spec, QUATERNION_AT[spec.shape[-1]]) if index in where else spec
                 for index, spec in enumerate(specs)]
    return _recipe(arguments), "".join(f", {slots[index].name}[..., {arguments[index].start}:"
                                       f"{arguments[index].start + 4}] a unit quaternion" for index in where)


def wanted_sizes(errors: list[str]) -> list[int]:
    """Sizes (2 to 16) that the error texts ask for, most often named first, at most a few."""
    counts: dict[int, int] = {}
    for error in errors:
        for pattern in _WANTED_SIZE:
            for match in pattern.finditer(error):
                size = int(match.group(1))
                if 2 <= size <= 16:
                    counts[size] = counts.get(size, 0) + 1
    return sorted(counts, key=lambda size: -counts[size])[:MAX_WANTED_SIZES]


# --- domains the documentation states --------------------------------------------------------------

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_COMPARISON = {"<": "<", "<=": "<=", "≤": "<=", ">": ">", ">=": ">=", "≥": ">="}


def stated_domains(cls: type, slots: list[Slot]) -> list[Slot]:
    """The slots with each parameter's value (or a tensor's range) moved into the domain that the
    class's or forward's docstring states: ``beta > 1``, ``0 < p < 1``, ``alpha >= 2``. A backward
    may be right only there (a shortcut that needs ``beta > 1``); a guess outside it would make
    gradcheck blame a correct formula."""
    text = _documentation(cls)
    if not text:
        return slots
    result = []
    for slot in slots:
        bounds = _bounds(text, slot.name)
        if bounds is None or slot.kind not in ("value", FLOAT):
            result.append(slot)
            continue
        low, high = bounds
        if slot.kind == FLOAT:
            result.append(replace(slot, domain=(low if low is not None else high - 1.0,
                                                high if high is not None else low + 1.0)))
            continue
        current = slot.values[0] if slot.values else None
        if not isinstance(current, (int, float)) or isinstance(current, bool) or \
                ((low is None or current > low) and (high is None or current < high)):
            result.append(slot)
            continue
        inside = (low + high) / 2 if low is not None and high is not None else \
            (low + (1 if isinstance(current, int) else 0.5)) if low is not None else high - 0.5
        result.append(replace(slot, values=(type(current)(inside) if isinstance(current, int) else inside,)))
    return result


def _bounds(text: str, name: str) -> Optional[tuple[Optional[float], Optional[float]]]:
    """(low, high) that ``text`` states for ``name`` (exclusive; None where open); None if nothing."""
    operator = r"(<=|>=|<|>|≤|≥)"
    escaped = re.escape(name)
    low = high = None
    between = re.search(rf"{_NUMBER}\s*{operator}\s*{escaped}\s*{operator}\s*{_NUMBER}", text)
    if between:
        first, second = float(between.group(1)), float(between.group(4))
        return (min(first, second), max(first, second))
    for match in re.finditer(rf"(?<![\w.]){escaped}\s*(?:must be |should be )?{operator}\s*{_NUMBER}", text):
        comparison, number = _COMPARISON[match.group(1)], float(match.group(2))
        if comparison.startswith(">"):
            low = number if low is None else max(low, number)
        else:
            high = number if high is None else min(high, number)
    if re.search(rf"(?<![\w.]){escaped}\b[^.\n]{{0,30}}\b(?:must be|should be|is) positive", text):
        low = 0.0 if low is None else low
    if low is None and high is None:
        return None
    return (low, high)


# --- a last dimension the class states -------------------------------------------------------------

_SIZE_WORDS = {"two": 2, "three": 3, "four": 4, "2": 2, "3": 3, "4": 4, "6": 6, "7": 7, "8": 8}
_LAST_DIMENSION_TEXT = re.compile(r"last dim(?:ension)?\s*(?:\)\s*)?(?:is|of size|has size|equal to|=|must be|of)\s+"
                                  r"(two|three|four|\d)\b", re.IGNORECASE)


def stated_last_sizes(cls: type, slots: list[Slot]) -> list[Slot]:
    """The slots with a float tensor's last size fixed where the class says it: forward reads only
    ``x[..., 0]`` and ``x[..., 1]`` (a complex number stored as two reals: 2), or the tensor's
    documentation says "whose last dimension is two". On another size forward ignores the other
    columns, and backward's gradient for them is whatever it is: gradcheck would judge a guess."""
    floats = [slot for slot in slots if slot.kind == FLOAT and slot.shape is None and slot.last is None]
    if not floats:
        return slots
    source = _forward_source(cls)
    documentation = _documentation(cls)
    sizes: dict[str, int] = {}
    for slot in floats:
        indices = re.findall(rf"(?<![\w.]){re.escape(slot.name)}\[\s*\.\.\.\s*,\s*(\d+)\s*\]", source)
        other_uses = re.findall(rf"(?<![\w.]){re.escape(slot.name)}\[(?!\s*\.\.\.\s*,\s*\d+\s*\])", source)
        if indices and not other_uses:
            sizes[slot.name] = max(int(index) for index in indices) + 1
            continue
        described = _parameter_text(documentation, slot.name) or (documentation if len(floats) == 1 else "")
        match = _LAST_DIMENSION_TEXT.search(described)
        if match:
            sizes[slot.name] = _SIZE_WORDS.get(match.group(1).lower(), 0) or int(match.group(1))
    if not sizes:
        return slots
    return [replace(slot, last=sizes[slot.name]) if slot.name in sizes else slot for slot in slots]


# `K : Tensor [n, n]`, `x (Tensor): (B, N, 3)`: a bracket of sizes on the parameter's first line.
_STATED_SHAPE = re.compile(r"[\[(]\s*((?:[A-Za-z_]\w*|\d+)(?:\s*[,x×]\s*(?:[A-Za-z_]\w*|\d+))*)\s*[\])]")
_SYMBOL_SIZES = (4, 3, 5, 2, 6, 7)
_NOT_SIZES = frozenset({"optional", "default", "tensor", "torch", "float", "int", "bool", "none", "array", "ndarray"})


def stated_shapes(cls: type, slots: list[Slot]) -> list[Slot]:
    """The float tensors' shapes where the docstring states every one of them with sizes
    (``K : Tensor [n, n]`` beside ``z0 : Tensor [n]``): one size per symbol, in the order they
    first appear, so that symbols shared between inputs stay equal and a square matrix stays
    square. Nothing when one tensor's shape is not stated: a plan then sizes them all together."""
    floats = [slot for slot in slots if slot.kind == FLOAT and slot.shape is None]
    documentation = _documentation(cls) if floats else ""
    if not documentation:
        return slots
    symbols: dict[str, int] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    for slot in floats:
        described = _parameter_text(documentation, slot.name).split("\n", 1)[0]
        match = _STATED_SHAPE.search(described[described.find(slot.name) + len(slot.name):]) if described else None
        if match is None:
            return slots
        shape = []
        for size in re.split(r"\s*[,x×]\s*", match.group(1)):
            if size.isdigit():
                shape.append(int(size))
                continue
            if size.lower() in _NOT_SIZES or len(symbols) >= len(_SYMBOL_SIZES) and size not in symbols:
                return slots
            shape.append(symbols.setdefault(size, _SYMBOL_SIZES[len(symbols)]))
        shapes[slot.name] = tuple(shape)
    return [replace(slot, shape=shapes[slot.name]) if slot.name in shapes else slot for slot in slots]


def _documentation(cls: type) -> str:
    """The class's docstring and forward's, where parameters, types and domains are described."""
    return "\n".join(filter(None, (inspect.getdoc(cls), inspect.getdoc(getattr(cls, "forward", None)))))


def _forward_source(cls: type) -> str:
    try:
        return inspect.getsource(cls.forward)
    except (OSError, TypeError):
        return ""


def _parameter_text(documentation: str, name: str) -> str:
    """The description of parameter ``name`` in a numpy- or Google-style docstring."""
    match = re.search(rf"^(\s*){re.escape(name)}\s*(?::|\()[^\n]*(?:\n|$)((?:\1\s+[^\n]*\n?)*)", documentation,
                      re.MULTILINE)
    return (match.group(0) if match else "")


# --- plain values that forward's code and docstring show ---------------------------------------------

_DOCUMENTED_VALUES = {"int": (2, 1), "float": (0.5,), "bool": (False, True)}
_DIMENSION_KEYWORDS = frozenset({"dim", "axis", "dims", "dimension"})


def plain_value_hints(cls: type) -> dict[str, tuple[Any, ...]]:
    """Parameter name -> plain values, for parameters nothing typed: a docstring that gives the
    type (Google ``mode (int): ...``, numpy ``mode : int``), or a forward that uses the parameter
    as a Python value only: tested for truth (``if skip_hps:``; a tensor of several elements
    raises there), or passed as ``dim=``. A parameter forward also computes with stays a tensor."""
    documentation = _documentation(cls)
    hints: dict[str, tuple[Any, ...]] = {}
    for match in re.finditer(r"^\s*(\w+)\s*(?:\((int|float|bool)\)\s*:|:\s*(int|float|bool)\s*$)",
                             documentation, re.MULTILINE):
        hints.setdefault(match.group(1), _DOCUMENTED_VALUES[match.group(2) or match.group(3)])
    function = forward_function(cls)
    if function is None:
        return hints
    parameters = {argument.arg for argument in function.args.args}
    tested, dimensions, computed = set(), set(), set()
    for node in ast.walk(function):
        tests = []
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            tests.append(node.test)
        elif isinstance(node, ast.BoolOp):
            tests.extend(node.values)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            tests.append(node.operand)
        elif isinstance(node, ast.Call):
            dimensions.update(keyword.value.id for keyword in node.keywords
                              if keyword.arg in _DIMENSION_KEYWORDS and isinstance(keyword.value, ast.Name))
        elif isinstance(node, ast.BinOp):
            computed.update(side.id for side in (node.left, node.right) if isinstance(side, ast.Name))
        tested.update(test.id for test in tests if isinstance(test, ast.Name))
    for name in (tested - computed) & parameters:
        hints.setdefault(name, (False, True))
    for name in (dimensions - computed - tested) & parameters:
        hints.setdefault(name, (-1,))
    return hints


# --- square matrices and last sizes that forward's code reads ---------------------------------------

# Ops that take square matrices only (``torch.linalg.solve(A, b)``: its first argument).
_SQUARE_OPS = frozenset({"inv", "inv_ex", "inverse", "det", "logdet", "slogdet", "eig", "eigvals", "eigh", "eigvalsh",
                         "cholesky", "cholesky_ex", "matrix_exp", "matrix_power", "solve", "solve_ex", "lu_factor",
                         "ldl_factor", "cholesky_inverse"})
_SQUARE_METHODS = frozenset({"inverse", "det", "logdet", "slogdet", "cholesky", "matrix_exp", "matrix_power"})
MAX_COMPARED_LAST = 8


def read_shapes(cls: type, slots: list[Slot]) -> list[Slot]:
    """The float tensors' shapes where forward's code fixes them, before any error:

    - a tensor handed to an op that takes square matrices only (``torch.linalg.solve(A, b)``,
      ``torch.linalg.eigh(K)``, ``A.inverse()``) is square: the square plans come first
      (``plans``), for every tensor, so that a right-hand side fits too;
    - a last size compared with a number (``assert x.shape[-1] == 3``, ``if v.size(-1) != 4:
      raise``) is that size (``Slot.last``)."""
    floats = {slot.name for slot in slots if slot.kind == FLOAT and slot.shape is None}
    function = forward_function(cls) if floats else None
    if function is None:
        return slots
    square: set[str] = set()
    last: dict[str, int] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if node.func.attr in _SQUARE_OPS and node.args and isinstance(node.args[0], ast.Name) and \
                    (isinstance(owner, ast.Name) and owner.id == "torch" or
                     isinstance(owner, ast.Attribute) and owner.attr == "linalg"):
                square.add(node.args[0].id)
            elif node.func.attr in _SQUARE_METHODS and isinstance(owner, ast.Name):
                square.add(owner.id)
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1 and \
                isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            for side, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
                name = _last_size_read(side)
                if name in floats and isinstance(other, ast.Constant) and type(other.value) is int \
                        and 2 <= other.value <= MAX_COMPARED_LAST:
                    last.setdefault(name, other.value)
    if not square & floats and not last:
        return slots
    return [replace(slot, square=slot.name in square or slot.square,
                    last=slot.last if slot.last is not None else last.get(slot.name)) if slot.name in floats else slot
            for slot in slots]


def _last_size_read(node: ast.AST) -> Optional[str]:
    """The name whose last size ``node`` reads: ``x.shape[-1]``, ``x.size(-1)``, ``x.size()[-1]``."""
    def is_last(index: ast.AST) -> bool:
        return isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and \
            isinstance(index.operand, ast.Constant) and index.operand.value == 1
    if isinstance(node, ast.Subscript) and is_last(node.slice):
        return _shape_read(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" and \
            len(node.args) == 1 and is_last(node.args[0]) and isinstance(node.func.value, ast.Name):
        return node.func.value.id
    return None


# --- ranks that forward's code reads --------------------------------------------------------------

# A shape of each rank, the last two sizes even and different: forwards that unpack
# `N, C, H, W = x.shape` often halve H and W (a stride-2 filter bank, `assert h % 2 == 0`).
# Small (48 elements at rank 4): gradcheck perturbs every element. A batch of 2, not 1: a
# backward that mixes the samples up is right on a batch of one.
_RANKED = {1: (4,), 2: (2, 4), 3: (3, 2, 4), 4: (2, 3, 2, 4)}


def ranked_shape(rank: int, square: bool = False) -> tuple[int, ...]:
    """A shape of ``rank`` dimensions for a tensor whose rank forward's code fixes; ``square``:
    its last two sizes equal, for a square plan (``batch, rows, cols = x.size()`` and then
    ``assert rows == cols``, a matrix square root)."""
    shape = _RANKED.get(rank) or (2,) * (rank - 4) + _RANKED[4]
    return (*shape[:-2], shape[-1], shape[-1]) if square and rank >= 2 else shape


_FORWARD_TREES: dict[Any, Optional[ast.FunctionDef]] = {}


def forward_function(cls: type) -> Optional[ast.FunctionDef]:
    """forward's ``def``, parsed once per forward: each reader of forward's code asks for it
    (ranks, shapes, numbers, callables...), and the candidates are built more than once a class.
    The readers only read the tree."""
    forward = getattr(cls, "forward", None)
    if forward not in _FORWARD_TREES:
        try:
            tree = ast.parse(textwrap.dedent(_forward_source(cls)))
        except SyntaxError:
            tree = None
        _FORWARD_TREES[forward] = next((node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)),
                                       None) if tree is not None else None
    return _FORWARD_TREES[forward]


def read_from_forward(cls: type, slots: list[Slot]) -> list[Slot]:
    """The guessed tensors that forward's code shows are something else, read in one parse:
    ``unpacked_in_calls``, then ``called_in_forward``, then ``tested_in_forward``, then
    ``counted_in_forward``."""
    function = forward_function(cls) if _guessed(slots) else None
    if function is None:
        return slots
    for reader in (unpacked_in_calls, called_in_forward, tested_in_forward, counted_in_forward):
        slots = reader(function, slots)
    return slots


def _guessed(slots: list[Slot]) -> set[str]:
    return {slot.name for slot in slots if slot.kind == FLOAT and slot.guessed}


def tested_in_forward(function: ast.FunctionDef, slots: list[Slot]) -> list[Slot]:
    """Guessed tensors that forward compares with strings (``if mode == 'zero':``, ``mode in
    ('a', 'b')``): those strings, in the order the code names them; or tests as a condition on
    their own (``if normalize:``, ``not inplace``): False, then True. A tensor of several values
    raises there ("Boolean value of Tensor with more than one value is ambiguous")."""
    guessed = _guessed(slots)
    strings: dict[str, list[str]] = {}
    flags: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            if isinstance(right, ast.Name) and not isinstance(left, ast.Name):
                left, right = right, left
            if isinstance(left, ast.Name) and left.id in guessed:
                constants = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
                for constant in constants:
                    if isinstance(constant, ast.Constant) and isinstance(constant.value, str) \
                            and constant.value not in strings.setdefault(left.id, []):
                        strings[left.id].append(constant.value)
        tests = [node.test] if isinstance(node, (ast.If, ast.While, ast.IfExp)) else \
            node.values if isinstance(node, ast.BoolOp) else \
            [node.operand] if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else []
        flags.update(test.id for test in tests if isinstance(test, ast.Name) and test.id in guessed)
    return [Slot(slot.name, "value", tuple(strings[slot.name])) if strings.get(slot.name)
            else Slot(slot.name, "value", (False, True)) if slot.name in flags
            else slot for slot in slots]


def called_in_forward(function: ast.FunctionDef, slots: list[Slot]) -> list[Slot]:
    """Guessed tensors that forward calls by name (``y1 = x1 + fm(x2)``): the stand-in callable,
    not a tensor that would raise "'Tensor' object is not callable". Each such parameter at once:
    the second tries change one slot at a time, and two halves of a reversible block need both."""
    guessed = _guessed(slots)
    called = {node.func.id for node in ast.walk(function)
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in guessed}
    return [Slot(slot.name, "value", (_identity,)) if slot.name in called else slot for slot in slots]


def unpacked_in_calls(function: ast.FunctionDef, slots: list[Slot]) -> list[Slot]:
    """Guessed tensors that forward unpacks into a call, ``op(x, *args, **kwargs)`` with ``args``
    and ``kwargs`` ordinary parameters (the caller passes the op's extra arguments along): an
    empty tuple for ``*args``, an empty dict for ``**kwargs``, where a tensor raises ("argument
    after ** must be a mapping")."""
    guessed = _guessed(slots)
    empty: dict[str, Any] = {}
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        for argument in node.args:
            if isinstance(argument, ast.Starred) and isinstance(argument.value, ast.Name) \
                    and argument.value.id in guessed:
                empty.setdefault(argument.value.id, ())
        for keyword in node.keywords:
            if keyword.arg is None and isinstance(keyword.value, ast.Name) and keyword.value.id in guessed:
                empty.setdefault(keyword.value.id, {})
    return [Slot(slot.name, "value", (empty[slot.name],)) if slot.name in empty else slot for slot in slots]


# Methods (and ``torch.`` functions, one argument later) whose first argument is a dimension, or
# whose arguments are sizes or counts; a float tensor of several elements raises in each of them.
_DIMENSION_FIRST = frozenset({"sum", "mean", "prod", "std", "var", "nansum", "nanmean", "size", "softmax",
                              "log_softmax", "cumsum", "cumprod", "logcumsumexp", "unsqueeze", "squeeze",
                              "argmax", "argmin", "logsumexp", "amax", "amin", "unbind", "narrow", "select",
                              "flatten", "cat", "concat", "stack", "all", "any", "count_nonzero", "diff"})
_DIMENSION_PAIR = frozenset({"transpose", "swapaxes", "swapdims", "movedim"})
_SIZES = frozenset({"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "tile"})
_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn", "eye", "arange"})  # `torch.zeros(k, n)`
_COUNT_FIRST = frozenset({"topk", "kthvalue", "chunk", "tensor_split"})
_CLAMPS = frozenset({"clamp", "clamp_", "clip", "clip_"})
_TORCH_MODULES = frozenset({"torch", "F", "functional"})
_OTHER_MODULES = frozenset({"np", "numpy", "math", "scipy", "sp", "jnp", "cp", "cupy"})  # their own conventions
DIMENSION, FIRST_DIMENSION, COUNT = (-1,), (0,), (2,)
BOUNDS = ((-0.5,), (0.5,))  # a clamp's lower and upper bound: inside the values' range, so both clip


def counted_in_forward(function: ast.FunctionDef, slots: list[Slot]) -> list[Slot]:
    """Guessed tensors that forward's code uses where only a Python number fits, each made one:

    - a dimension (``x.sum(k)``, ``x.size(k)``, ``torch.cat(xs, k)``, ``x.transpose(a, b)``): -1,
      the first of a pair 0;
    - a size or a count (``range(k)``, ``int(k)``, ``x[:k]``, ``x.view(-1, k)`` beside other sizes,
      ``torch.topk(x, k)``): 2 (a start, ``x.narrow(d, start, k)``: 0);
    - compared with an int (``if k > 1:``, ``assert n == 3``): 2, then 1;
    - a clamp's bound (``torch.clamp(x, q_min, q_max)``, ``x.clamp(min=lo, max=hi)``): -0.5 and 0.5.

    A tensor of several elements raises in each of the first three (and a guess that forward's
    error would lead to a value only one slot at a time: a quantizer's ``ch_axis``, ``quant_min``
    and ``quant_max`` need all three). A parameter forward also reads a tensor-only attribute of
    (``k.shape``) stays a tensor."""
    guessed = _guessed(slots) - tensor_only_reads(function)
    if not guessed:
        return slots
    found: dict[str, tuple[Any, ...]] = {}

    def mark(node: Optional[ast.AST], values: tuple[Any, ...]) -> None:
        if isinstance(node, ast.Name) and node.id in guessed:
            found.setdefault(node.id, values)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):  # `x.view(-1, -k)`
            mark(node.operand, values)

    tests = [test for node in ast.walk(function) if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert))
             for test in (node.test.values if isinstance(node.test, ast.BoolOp) else [node.test])]
    for test in tests:  # (not `x > 0` elsewhere: on a tensor that is a mask)
        if isinstance(test, ast.Compare) and any(isinstance(side, ast.Constant) and type(side.value) is int
                                                 for side in (test.left, *test.comparators)):
            for side in (test.left, *test.comparators):
                mark(side, (2, 1))
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            for argument in node.args:
                mark(argument, COUNT)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int" \
                and len(node.args) == 1:  # `ctx.K = int(K)`: a count handed in as a number
            mark(node.args[0], COUNT)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in _OTHER_MODULES:
                continue
            on_torch = isinstance(owner, ast.Attribute) and owner.attr == "linalg" or \
                isinstance(owner, ast.Name) and owner.id in _TORCH_MODULES
            first = 1 if on_torch and name not in _FACTORIES else 0  # `torch.sum(x, k)`: x comes first
            arguments = node.args
            if name in _DIMENSION_FIRST and len(arguments) > first:
                mark(arguments[first], DIMENSION)
                if name == "narrow":  # `x.narrow(d, start, length)`
                    for argument in arguments[first + 1:first + 3]:
                        mark(argument, COUNT if argument is arguments[first + 2] else (0,))
            elif name in _DIMENSION_PAIR and len(arguments) > first + 1:
                mark(arguments[first], FIRST_DIMENSION)
                mark(arguments[first + 1], DIMENSION)
            elif name in _COUNT_FIRST and len(arguments) > first:
                mark(arguments[first], COUNT)
            elif (name in _SIZES or on_torch and name in _FACTORIES) and len(arguments) - first > 1:
                # (a lone argument may be the whole size, `x.repeat(factors)`: a tuple, not a count)
                for argument in arguments[first:]:
                    mark(argument, COUNT)
            elif name in _CLAMPS:
                bounds = arguments[1:3] if on_torch else arguments[0:2]
                for bound, values in zip(bounds, BOUNDS):
                    mark(bound, values)
                for keyword in node.keywords:
                    if keyword.arg in ("min", "max"):
                        mark(keyword.value, BOUNDS[keyword.arg == "max"])
            for keyword in node.keywords:
                if keyword.arg in ("dim", "axis"):
                    mark(keyword.value, DIMENSION)
        elif isinstance(node, ast.Slice):
            for bound in (node.lower, node.upper, node.step):
                mark(bound, COUNT)
    return [Slot(slot.name, "value", found[slot.name]) if slot.name in found else slot for slot in slots]


def _shape_read(node: ast.AST) -> Optional[str]:
    """The name whose whole shape ``node`` reads: ``x.shape``, ``x.size()``."""
    if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name):
        return node.value.id
    if isinstance(node, ast.Call) and not node.args and not node.keywords and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "size" and isinstance(node.func.value, ast.Name):
        return node.func.value.id
    return None


def read_ranks(cls: type, slots: list[Slot]) -> list[Slot]:
    """The slots with a float tensor's rank where forward's code fixes it: ``N, C, H, W = x.shape``
    unpacks exactly four dimensions (a guess of two raises "not enough values to unpack"),
    ``assert x.ndim == 5`` (``x.dim()``, ``len(x.shape)``) says five, and ``x[:, :, None, :]``
    indexes at least three, as ``x.shape[-3]`` and ``x.size(2)`` read. Indexing with ``...`` says nothing of the rank. A size compared with a
    number at the last index of that rank (``assert grid.shape[4] == 3``) is the last size."""
    floats = {slot.name for slot in slots if slot.kind == FLOAT and slot.shape is None}
    function = forward_function(cls) if floats else None
    if function is None:
        return slots
    exact: dict[str, int] = {}
    indexed: dict[str, Optional[int]] = {}
    sizes: dict[str, dict[int, int]] = {}  # `x.shape[i] == c`, i >= 0
    for node in ast.walk(function):
        if isinstance(node, ast.Compare) and len(node.comparators) == 1 and isinstance(node.ops[0], ast.Eq):
            for side, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
                if not (isinstance(other, ast.Constant) and type(other.value) is int):
                    continue
                name = _rank_read(side)
                if name in floats and 1 <= other.value <= MAX_READ_RANK:
                    exact.setdefault(name, other.value)
                read = _size_read_at(side)
                if read is not None and read[0] in floats and 2 <= other.value <= MAX_COMPARED_LAST:
                    sizes.setdefault(read[0], {}).setdefault(read[1], other.value)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List)):
            elements = node.targets[0].elts
            name = _shape_read(node.value)
            if name in floats and not any(isinstance(element, ast.Starred) for element in elements):
                exact.setdefault(name, len(elements))
        elif (dimension := _dimension_read(node)) is not None and dimension[0] in floats:
            # `x.shape[-3]`, `x.size(3)`: at least three (four) dimensions.
            name, needed = dimension
            if not (name in indexed and indexed[name] is None):
                indexed[name] = max(needed, indexed.get(name) or 0)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in floats:
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            name = node.value.id
            if any(isinstance(item, ast.Constant) and item.value is Ellipsis for item in items) or \
                    (name in indexed and indexed[name] is None):
                indexed[name] = None  # `x[..., 0]`: any rank
                continue
            count = sum(not (isinstance(item, ast.Constant) and item.value is None) for item in items)
            indexed[name] = max(count, indexed.get(name) or 0)
    if not exact and not any(indexed.values()):
        return slots
    last = {name: sizes[name][rank - 1] for name, rank in exact.items() if rank - 1 in sizes.get(name, {})}
    return [replace(slot, rank=exact[slot.name], last=slot.last if slot.last is not None else last.get(slot.name))
            if slot.name in exact and slot.kind == FLOAT
            else replace(slot, min_rank=indexed[slot.name]) if slot.kind == FLOAT and (indexed.get(slot.name) or 0) > 2
            else slot for slot in slots]


MAX_READ_RANK = 6


def _dimension_read(node: ast.AST) -> Optional[tuple[str, int]]:
    """(name, the least rank it needs) where ``node`` reads one dimension's size at a constant
    index: ``x.shape[-3]`` (3), ``x.size(2)`` (3)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
            and isinstance(node.value.value, ast.Name):
        name, index = node.value.value.id, node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" \
            and isinstance(node.func.value, ast.Name) and len(node.args) == 1 and not node.keywords:
        name, index = node.func.value.id, node.args[0]
    else:
        return None
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and isinstance(index.operand, ast.Constant):
        value = -index.operand.value if type(index.operand.value) is int else None
    else:
        value = index.value if isinstance(index, ast.Constant) and type(index.value) is int else None
    if value is None or not -MAX_READ_RANK <= value < MAX_READ_RANK:
        return None
    return name, (-value if value < 0 else value + 1)


def _rank_read(node: ast.AST) -> Optional[str]:
    """The name whose rank ``node`` reads: ``x.ndim``, ``x.dim()``, ``len(x.shape)``."""
    if isinstance(node, ast.Attribute) and node.attr == "ndim" and isinstance(node.value, ast.Name):
        return node.value.id
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("dim", "ndimension") and isinstance(node.func.value, ast.Name):
        return node.func.value.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" \
            and len(node.args) == 1:
        return _shape_read(node.args[0])
    return None


def _size_read_at(node: ast.AST) -> Optional[tuple[str, int]]:
    """(name, i) where ``node`` reads size i >= 0 of a name: ``x.shape[i]``, ``x.size(i)``."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int \
            and node.slice.value >= 0:
        name = _shape_read(node.value)
        return (name, node.slice.value) if name else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" \
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and type(node.args[0].value) is int \
            and node.args[0].value >= 0 and isinstance(node.func.value, ast.Name):
        return node.func.value.id, node.args[0].value
    return None


def _values_used_as_tensors(cls: type, slots: list[Slot]) -> list[Slot]:
    """The slots with a plain value that the parameter's name alone suggested (``low`` as a
    bound) made a float tensor where forward's code fixes its rank (``read_ranks``: it unpacks
    its shape or indexes three dimensions), or reads what only a tensor has (``scale.view(-1)``,
    ``mu.detach()``, ``scale.device``: ``tensor_only_reads``). A default, an annotation or a call
    site still wins.
    Any other tensor use (``p[..., :3]``) is left to the second tries: forward's error ("'float'
    object is not subscriptable") leads them to the last sizes, with unit quaternions where a
    Lie group's layout asks for them, which a plain (3, 4) tensor would miss."""
    named = {slot.name for slot in slots if slot.kind == "value" and slot.from_name}
    if not named:
        return slots
    as_tensors = [Slot(slot.name, FLOAT, guessed=True) if slot.name in named else slot for slot in slots]
    ranked = {slot.name for slot in read_ranks(cls, as_tensors)
              if slot.name in named and (slot.rank is not None or slot.min_rank is not None)}
    function = forward_function(cls)
    ranked |= named & tensor_only_reads(function) if function is not None else set()
    return [Slot(slot.name, FLOAT, guessed=True) if slot.name in ranked else slot for slot in slots]


# What only a tensor has, of what forward reads from a parameter (a Python number has none of it):
# `mu.detach()`, `scale.view(-1, 1)`, `scale.device`. (Not `.real`, `.item()`: numbers have them too,
# or a 1-element tensor is meant, which the second tries find from forward's error.)
_TENSOR_ONLY = frozenset({
    "detach", "view", "view_as", "reshape", "reshape_as", "unsqueeze", "squeeze", "expand", "expand_as",
    "device", "dtype", "shape", "size", "dim", "ndim", "numel", "cpu", "cuda", "to", "type_as", "clone",
    "contiguous", "numpy", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "requires_grad",
    "transpose", "permute", "flatten", "repeat", "masked_fill", "index_select", "gather", "matmul", "mm"})


def tensor_only_reads(function: ast.FunctionDef) -> set[str]:
    """forward's parameters that forward reads a tensor-only attribute or method of (``_TENSOR_ONLY``)."""
    parameters = {argument.arg for argument in function.args.args}
    return {node.value.id for node in ast.walk(function)
            if isinstance(node, ast.Attribute) and node.attr in _TENSOR_ONLY and isinstance(node.value, ast.Name)
            and node.value.id in parameters}


# --- ranks and dtypes that forward's errors ask for ------------------------------------------------

_UNPACKED_RANK = re.compile(r"not enough values to unpack \(expected (\d+), got \d+\)|"
                            r"too many values to unpack \(expected (\d+)")
_STATED_RANK = re.compile(r"(?:must be|should be|[Ee]xpected(?: a)?) (\d)-?D\b")
_DIMENSION_OUT_OF_RANGE = re.compile(r"Dimension out of range \(expected to be in range of \[-\d+, \d+\], "
                                     r"but got (-?\d+)\)")
MAX_RANK = 6


def wanted_ranks(errors: list[str]) -> list[int]:
    """Ranks (3 to 6) that the errors ask for: a shape unpacked into more names than a guess has
    dimensions, a dimension index past a guess's last one."""
    ranks: list[int] = []
    for error in errors:
        for match in _UNPACKED_RANK.finditer(error):
            ranks.append(int(match.group(1) or match.group(2)))
        ranks.extend(int(match.group(1)) for match in _STATED_RANK.finditer(error))
        for match in _DIMENSION_OUT_OF_RANGE.finditer(error):
            got = int(match.group(1))
            ranks.append(got + 1 if got >= 0 else -got)
    return [rank for rank in dict.fromkeys(ranks) if 3 <= rank <= MAX_RANK]


def _ranked(slots: list[Slot], errors: list[str]) -> Iterator[list[Slot]]:
    """The slots with the float tensors whose rank nothing fixed given a rank an error asks for:
    all of them, then the first one alone."""
    free = [slot.name for slot in slots if slot.kind == FLOAT and slot.shape is None and slot.rank is None]
    for rank in wanted_ranks(errors) if free else ():
        yield [replace(slot, min_rank=rank) if slot.name in free else slot for slot in slots]
        if len(free) > 1:
            yield [replace(slot, min_rank=rank) if slot.name == free[0] else slot for slot in slots]


def _targeted(parameters: list[inspect.Parameter], slots: list[Slot], errors: list[str]) -> Iterator[list[Slot]]:
    """The slots changed as the errors say outright: the dtypes they ask for, then on top of that
    (read once those tries have raised theirs: ``errors`` grows meanwhile) the ranks."""
    typed = next(_with_dtypes(parameters, slots, errors), None)
    if typed is not None:
        yield typed
    for base in ([typed] if typed is not None else []) + [slots]:
        yield from _ranked(base, errors)
    yield from _matrix_product_sized(parameters, slots, errors)
    if any(_WRONG_COUNT.search(error) for error in errors):
        # `*params` guessed one tensor where backward returns a gradient per parameter of the
        # modules it is given (none, for the stand-in callable): try none.
        variadic = [parameter.name for parameter in parameters if parameter.kind == inspect.Parameter.VAR_POSITIONAL]
        without = [slot for slot in slots if not any(slot.name == f"{name}[0]" for name in variadic)]
        if len(without) < len(slots) and any(slot.kind == FLOAT for slot in without):
            yield without


_WRONG_COUNT = re.compile(r"returned an incorrect number of gradients")
# "mat1 and mat2 shapes cannot be multiplied (3x4 and 12x16)": mat1's columns must be mat2's rows.
_MATRIX_PRODUCT = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
MAX_PRODUCT_SIZE = 32


def _matrix_product_sized(parameters: list[inspect.Parameter], slots: list[Slot],
                          errors: list[str]) -> Iterator[list[Slot]]:
    """The slots with the first float tensor's last size what a matrix product asked of it: forward
    builds the other factor from the other inputs (a quaternion layer concatenates four weights
    into a (4·in, 4·out) matrix, so its input is (B, 4·in)). Then the same with the tensors whose
    default is None (a bias) left out, whose guessed size the product's result may not share."""
    first = next((slot.name for slot in slots if slot.kind == FLOAT and slot.shape is None and slot.last is None), None)
    if first is None:
        return
    defaults_none = {parameter.name for parameter in parameters if parameter.default is None}
    for size in dict.fromkeys(int(match.group(3)) for error in errors for match in _MATRIX_PRODUCT.finditer(error)
                              if int(match.group(2)) != int(match.group(3))):
        if not 2 <= size <= MAX_PRODUCT_SIZE:
            continue
        sized = [replace(slot, last=size) if slot.name == first else slot for slot in slots]
        yield sized
        left_out = [Slot(slot.name, "value", (None,)) if slot.kind == FLOAT and slot.name in defaults_none
                    and slot.name != first else slot for slot in sized]
        if left_out != sized:
            yield left_out


# "labels must be torch.int32", "expected scalar type Int but found Long", "Expected tensor of dtype int32".
_DTYPE_WANTED = re.compile(r"(?:(\w+) must be (?:of )?(?:type |dtype )?torch\.(int32|int64|int16|uint8)\b)|"
                           r"expected scalar type (Int|Long|Short|Byte)\b|"
                           r"\bExpected\b[^\n]{0,60}?\b(int32|int64)\b")
_DTYPE_NAMES = {"Int": "int32", "Long": "int64", "Short": "int16", "Byte": "uint8"}
# Integer tensors beside the activations: lengths and counts (`act_lens`, `target_lengths`).
_COUNT_NAMES = re.compile(r"(?:^|_)(?:len|lens|length|lengths|counts?|sizes)$")


# "where expected condition to be a boolean tensor", "masked_fill_ only supports boolean masks".
_BOOL_WANTED = re.compile(r"condition to be a boolean tensor|only supports boolean masks|"
                          r"\bexpected (?:a )?bool(?:ean)? (?:tensor|mask)", re.IGNORECASE)
# Tensors beside the data that are flags: `converged`, `done`, `is_active`, `valid_mask`.
_FLAG_NAMES = re.compile(r"(?:^|_)(?:mask|masks|converged|done|finished|valid|active|flags?)$|^(?:is|has)_")


def _with_dtypes(parameters: list[inspect.Parameter], slots: list[Slot], errors: list[str]) -> Iterator[list[Slot]]:
    """The slots with the integer tensors an error asks another dtype of: the index tensors, and
    the tensors guessed as floats that the error names or that are named like lengths, all of
    them in the dtype asked (one error names the first input it checks; the others follow).
    Where an error asks for a boolean tensor, the float tensors named like flags are masks set everywhere."""
    if any(_BOOL_WANTED.search(error) for error in errors):
        flagged = [replace(slot, kind=MASK, rank=None, min_rank=None, values=(True,))
                   if slot.kind == FLOAT and _FLAG_NAMES.search(slot.name.lower())
                   else slot for slot in slots]
        if flagged != slots and any(slot.kind == FLOAT for slot in flagged):
            yield flagged
            return
    for error in errors:
        match = _DTYPE_WANTED.search(error)
        if match is None:
            continue
        dtype = match.group(2) or _DTYPE_NAMES.get(match.group(3) or "") or match.group(4)
        named = match.group(1)
        changed = []
        for slot in slots:
            counted = slot.kind == FLOAT and _guessed_tensor(parameters, slot) and \
                (slot.name == named or _COUNT_NAMES.search(slot.name.lower()))
            if slot.kind in (LENGTHS, EDGES):
                changed.append(replace(slot, dtype=dtype))
            elif slot.kind == INDEX or counted:
                changed.append(replace(slot, kind=INDEX, dtype=dtype, rank=None, min_rank=None))
            else:
                changed.append(slot)
        if changed != slots and any(slot.kind == FLOAT for slot in changed):
            yield changed
        return


# --- objects that cannot be made up --------------------------------------------------------------

def called_parameters(cls: type) -> list[str]:
    """forward's parameters that forward calls (``fn(x)``) or that backward calls through ctx
    (``ctx.op = op`` in forward, ``ctx.op(grad, ...)`` in backward), in forward's order."""
    function = forward_function(cls)
    if function is None:
        return []
    parameters = [argument.arg for argument in function.args.args]
    called: set[str] = set()
    kept: dict[str, str] = {}  # ctx attribute -> the parameter stored in it
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in parameters:
            called.add(node.func.id)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in parameters:
            kept.update((target.attr, node.value.id) for target in node.targets if isinstance(target, ast.Attribute))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls.backward)))
    except (OSError, TypeError, SyntaxError):
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in kept:
            called.add(kept[node.func.attr])
    return [name for name in parameters if name in called]


_STAND_IN_LACKS = re.compile(r"'_(?:Identity|Mixing)' object has no attribute '(\w+)'")
_NOT_CALLABLE = re.compile(r"object is not callable")


def needed_objects(cls: type, error: str) -> str:
    """What the class needs that no guess can be (``""`` when the error is not about it): a
    callable that forward or backward calls and a tensor stood in for, or an object whose
    attributes forward reads where the small stand-in callable was passed."""
    lacks = _STAND_IN_LACKS.search(error)
    parameters = forward_parameters(cls) or []
    if lacks:
        stood_in = [p.name for p in parameters if CALLABLE_NAMES.match(p.name.lower()) or _CALLABLE_SUFFIX.search(p.name.lower())
                    or p.name in called_parameters(cls)]
        if not stood_in:  # a tensor retried as a callable: not what the class needs
            return ""
        names = ", ".join(f"`{name}`" for name in stood_in)
        return (f"needs an object for {names} (forward reads its `.{lacks.group(1)}`; only a stand-in callable "
                "was tried); declare an @example")
    if _NOT_CALLABLE.search(error):
        called = called_parameters(cls)
        if not called:
            return ""
        names = ", ".join(f"`{name}`" for name in called)
        return f"needs a callable object for {names} (forward or backward calls it); declare an @example"
    return ""
