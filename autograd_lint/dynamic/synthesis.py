"""Inputs guessed from forward's signature: a small search over shapes until forward runs.

Each parameter is first classified (a float tensor, an index tensor, a mask, or a plain value) from
its annotation, default and name; then a few shape plans are tried for the float tensors, each
with values in [-1, 1) and then in [0.5, 2) (for forwards that need positive inputs: log, sqrt).
Index tensors are 1-D over the first dimension, then a column (N, 1) for gather/scatter along
dim 1; an ``Optional[Tensor]`` parameter is left out (None) once no tensor for it worked.
The search stays small on purpose: gradcheck's cost grows fast with the number of elements.

Every dimension of a plan's shapes has its own size, (2, 3, 4, 5) rather than (2, 3, 4, 4): on a
square input a backward that swaps height and width returns a gradient of the right shape and
passes gradcheck. Square plans come last, for the forwards that need them (a matrix inverse, an
``assert h == w``); call sites and declared examples keep their own shapes.

When no plan works, ``retry_candidates`` reads forward's errors: a parameter guessed as a tensor
that is really a size (``must be tuple of ints, not Tensor``), a callable (``'Tensor' object is
not callable``) or an optional object is tried as an int, a tuple of ints, a small callable and
None in turn; a forward that wants a particular last dimension (a Lie group's 3 to 8) gets
plans over it.
"""

from __future__ import annotations

import inspect
import itertools
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from autograd_lint.dynamic.candidate import Candidate
from autograd_lint.examples import TensorSpec

FLOAT, INDEX, MASK = "float tensor", "index tensor", "mask tensor"
MAX_VALUE_COMBINATIONS = 4

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
}
INDEX_NAMES = frozenset({"index", "indices", "idx", "ids", "target", "targets", "label", "labels",
                         "perm", "permutation", "positions", "segment_ids", "offsets"})
MASK_NAMES = frozenset({"mask", "attn_mask", "attention_mask", "padding_mask", "key_padding_mask", "keep",
                        "valid", "valid_mask", "is_valid"})
CALLABLE_NAMES = re.compile(r"^(fn|func|function|f|module|callback|op|layer|net|model|closure|run_function)$")
WEIGHT_NAMES = frozenset({"weight", "weights", "kernel", "filters", "weight_t"})
BIAS_NAMES = frozenset({"bias", "bias_t", "biases"})

VALUE_RANGES = ((-1.0, 1.0), (0.5, 2.0))


@dataclass(frozen=True)
class Slot:
    """What to pass for one forward parameter."""

    name: str
    kind: str  # FLOAT, INDEX, MASK, or "value"
    values: tuple[Any, ...] = ()  # alternatives for a "value" slot
    optional: bool = False  # a tensor annotated Optional[...]: None is tried when no tensor works


@dataclass
class Plan:
    name: str
    shape_of: Callable[[int, str], tuple[int, ...]]  # (index among float tensors, name) -> shape
    index_column: bool = False  # index tensors (N, 1), as gather/scatter along dim 1 need, not (N,)


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
    annotation = _annotation_text(parameter.annotation)
    default = parameter.default
    has_default = default is not inspect.Parameter.empty
    if parameter.kind == inspect.Parameter.VAR_KEYWORD:
        return []
    if parameter.kind == inspect.Parameter.VAR_POSITIONAL:
        return [Slot(f"{name}[0]", FLOAT)]
    if parameter.kind == inspect.Parameter.KEYWORD_ONLY:
        return [] if has_default else None  # apply passes positionals only
    if "tensor" in annotation:
        optional = bool(re.search(r"\boptional\b|\bnone\b", annotation))
        if lower in INDEX_NAMES or "long" in annotation:
            return [Slot(name, INDEX, optional=optional)]
        return [Slot(name, MASK if lower in MASK_NAMES else FLOAT, optional=optional)]
    if has_default and default is not None:
        return [Slot(name, "value", (default,))]
    if lower in NAMED_VALUES:
        return [Slot(name, "value", NAMED_VALUES[lower])]
    if has_default:  # `bias=None`, `out=None`: None is the documented "leave it out"
        return [Slot(name, FLOAT)] if lower in BIAS_NAMES | WEIGHT_NAMES else [Slot(name, "value", (None,))]
    if annotation in ("int", "builtins.int"):
        return [Slot(name, "value", (2, 1))]
    if annotation in ("float", "builtins.float"):
        return [Slot(name, "value", (0.5,))]
    if annotation in ("bool", "builtins.bool"):
        return [Slot(name, "value", (False, True))]
    if CALLABLE_NAMES.match(lower) or "callable" in annotation:
        return [Slot(name, "value", (_identity,))]
    if annotation in ("str", "builtins.str"):
        return None
    if lower in INDEX_NAMES:
        return [Slot(name, INDEX)]
    if lower in MASK_NAMES:
        return [Slot(name, MASK)]
    return [Slot(name, FLOAT)]


def _annotation_text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation.lower()
    return getattr(annotation, "__name__", str(annotation)).lower() if isinstance(annotation, type) \
        else str(annotation).lower()


def plans(float_names: list[str], has_index: bool = False) -> list[Plan]:
    """Shape plans for the float tensors, most common first; only those that fit the names."""
    names = [name.lower() for name in float_names]
    has_weight = any(name in WEIGHT_NAMES for name in names)
    has_bias = any(name in BIAS_NAMES for name in names)
    same = Plan("same (3, 4)", lambda i, n: (3, 4))
    result = []
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
    return result


def candidates(cls: type) -> Iterator[Candidate]:
    parameters = forward_parameters(cls)
    if parameters is None:
        return
    slots: list[Slot] = []
    for parameter in parameters:
        classified = classify(parameter)
        if classified is None:
            return  # a parameter we cannot invent (a callable, a string): give up early
        slots.extend(classified)
    yield from _candidates_for(slots)
    if any(slot.optional for slot in slots):
        # Optional[Tensor] parameters left out (None), once no tensor for them worked.
        yield from _candidates_for([Slot(slot.name, "value", (None,)) if slot.optional else slot for slot in slots])


def _candidates_for(slots: list[Slot]) -> Iterator[Candidate]:
    float_names = [slot.name for slot in slots if slot.kind == FLOAT]
    has_index = any(slot.kind == INDEX for slot in slots)
    value_choices = _value_choices(slots)
    for plan in plans(float_names, has_index) if float_names else [Plan("no float tensor", lambda i, n: ())]:
        for values in value_choices:
            for low, high in VALUE_RANGES:
                specs, detail = _arguments(slots, plan, values, low, high)
                yield Candidate("synthesized", f"{plan.name}: {detail}", _recipe(specs))


def _arguments(slots: list[Slot], plan: Plan, values: tuple, low: float, high: float) -> tuple[list, str]:
    arguments: list[Any] = []
    described = []
    value_iter = iter(values)
    float_index = 0
    first_shape: Optional[tuple[int, ...]] = None
    for slot in slots:
        if slot.kind == FLOAT:
            shape = plan.shape_of(float_index, slot.name)
            first_shape = shape if first_shape is None else first_shape
            float_index += 1
            arguments.append(TensorSpec(shape, low=low, high=high))
            described.append(f"{slot.name} {shape}")
        elif slot.kind == INDEX:
            # 1-D over the first dimension, values valid as a row index and as a class index.
            base = first_shape or (3, 4)
            size = base[0] if base else 3
            shape = (size, 1) if plan.index_column else (size,)
            arguments.append(TensorSpec(shape, dtype="int64", low=0, high=max(1, min(base or (3,)))))
            described.append(f"{slot.name} {shape} int64")
        elif slot.kind == MASK:
            arguments.append(TensorSpec(first_shape or (3, 4), dtype="bool"))
            described.append(f"{slot.name} mask")
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
    """The small callable tried for a parameter that forward calls (shown as ``identity``)."""

    def __call__(self, *arguments: Any, **keywords: Any) -> Any:
        return arguments[0] if arguments else None

    def __repr__(self) -> str:
        return "identity"


_identity = _Identity()


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
LAST_DIMENSIONS = (3, 4, 6, 7, 8)


def retry_candidates(cls: type, errors: list[str]) -> Iterator[Candidate]:
    """Second tries once every plan failed, chosen from forward's ``errors``."""
    parameters = forward_parameters(cls)
    if parameters is None:
        return
    slots: list[Slot] = []
    for parameter in parameters:
        classified = classify(parameter)
        if classified is None:
            return
        slots.extend(classified)
    text = " ".join(errors)
    values = next((wanted for pattern, wanted in _WANTS if pattern.search(text)), _ANY_VALUE)
    values = values + tuple(value for value in _ANY_VALUE if value not in values)
    guessed = [index for index, slot in enumerate(slots) if slot.kind == FLOAT and _guessed_tensor(parameters, slot)]
    floats = sum(slot.kind == FLOAT for slot in slots)
    for index in guessed[:MAX_RETRIED_SLOTS] if floats > 1 else ():  # a tensor must be left to check
        for value in values:
            changed = list(slots)
            changed[index] = Slot(slots[index].name, "value", (value,))
            yield from itertools.islice(_candidates_for(changed), 6)  # the first plans, both value ranges
    if _SHAPE_TROUBLE.search(text) and any(slot.kind == FLOAT for slot in slots):
        for last in LAST_DIMENSIONS:
            plan = Plan(f"last dimension {last}", lambda i, n, last=last: (2, last))
            for low, high in VALUE_RANGES:
                specs, detail = _arguments(slots, plan, next(iter(_value_choices(slots)), ()), low, high)
                yield Candidate("synthesized", f"{plan.name}: {detail}", _recipe(specs))


def _guessed_tensor(parameters: list[inspect.Parameter], slot: Slot) -> bool:
    """A float tensor by default only (no annotation says so, the name is not a weight's)."""
    parameter = next((p for p in parameters if p.name == slot.name), None)
    return parameter is not None and "tensor" not in _annotation_text(parameter.annotation) \
        and parameter.name.lower() not in WEIGHT_NAMES | BIAS_NAMES


def _value_choices(slots: list[Slot]) -> list[tuple]:
    return list(itertools.islice(
        itertools.product(*[slot.values for slot in slots if slot.kind == "value"]), MAX_VALUE_COMBINATIONS))
