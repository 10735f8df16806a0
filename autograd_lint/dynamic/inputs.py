"""Example inputs for one Function class (child side, torch imported).

Sources, in order (the first whose forward runs wins):
1. declared: ``@example(...)`` on the class, the module's ``__autograd_lint_examples__``, and
   ``[tool.autograd-lint.dynamic.examples]`` in the config;
2. call sites: ``Cls.apply(...)`` in the linted files and tests whose arguments are simple enough
   to evaluate without running the surrounding code, or calls of a module-level function that
   wraps ``apply`` (``callsites``);
3. synthesized from forward's signature: structured matrices first where a parameter's name or
   docstring asks for one (``structure``), then the plain guesses (``synthesis``), then second
   tries led by the errors (both): when no candidate ran, and also when the only ones that ran
   are guesses on which backward raised (the fallback below). The second tries start with the
   arguments that the package's own callers of ``apply`` build, the callers themselves called
   with synthesized arguments (``callers``).
Every source yields ``Candidate``s: a recipe of raw arguments; ``make_inputs`` turns a recipe into a
fresh tuple of float64 tensors requiring grad on the chosen device (but those a ``TensorSpec``
asks without: an input forward refuses gradients for), the same values every time.
A synthesized guess on which forward runs but backward raises, or returns a gradient autograd
rejects, is kept as a fallback while the search goes on (a guessed size that backward does not
share); a later guess is preferred if backward runs on it, unless forward then returns nothing
that requires grad (backward "runs" because nothing calls it). The errors of both, each text
once, feed the second tries.
Candidates on which forward raises are kept too (``FailedInputs``, the first few errors): for a
few rules (confirm.SHOWN_BY_A_RAISING_FORWARD) that exception is the evidence.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Optional

import torch

from autograd_lint.dynamic import callers, callsites, objects, structure, synthesis
from autograd_lint.dynamic.candidate import Candidate, CapturedTensor
from autograd_lint.dynamic.settings import from_config_value
from autograd_lint.examples import EXAMPLES_ATTRIBUTE, TensorSpec

SEED = 0
SEARCH_BUDGET_S = 10.0  # per class: the shape search must not eat the module's time limit


@dataclass
class ChosenInputs:
    source: str
    detail: str
    make_inputs: Callable[[], tuple]  # a fresh tuple for cls.apply, the same values each call
    shapes: str  # the tensors' shapes, for messages
    recipe: Callable[[], tuple]  # the raw arguments again, for another device
    # Set when these are guessed inputs on which backward raised (no guess let it run): then
    # backward's exception may be the guess's fault, and gradcheck is not run on them (checks.py).
    backward_error: str = ""
    guessed_constants: tuple[str, ...] = ()  # ``Candidate.guessed_constants``


@dataclass
class FailedInputs:
    """A candidate on which forward raised: for some rules (a non-tensor given to
    save_for_backward, a setup_context mismatch) that exception is the evidence."""

    source: str
    detail: str
    make_inputs: Callable[[], tuple]
    error: str  # "forward raised TypeError: ..."


SOURCE_RANK = {"declared": 0, "call-site": 1, "synthesized": 2}  # most trusted first
MAX_FAILURES_KEPT = 4  # a shape guess can fail before forward reaches the line that shows the bug


@dataclass
class InputsOutcome:
    chosen: Optional[ChosenInputs]
    reason: str  # why nothing worked (empty when chosen)
    attempts: int
    # Candidates on which forward raised, most trusted first, each with an error of its own;
    # only those that outrank `chosen` (all of them when nothing was chosen).
    failures: list[FailedInputs] = field(default_factory=list)


def choose_inputs(cls: type, module: Any, call_site_files: list[str], config_examples: dict,
                  module_path: str, device: str, use_declared: bool = True,
                  project_root: str = "") -> InputsOutcome:
    """Try every candidate in order; keep the first whose forward runs and gives a usable output."""
    deadline = time.monotonic() + SEARCH_BUDGET_S
    first_error = ""
    attempts = 0
    fallback: Optional[ChosenInputs] = None  # forward ran, backward raised: used if nothing better
    failures: list[FailedInputs] = []
    probe_backward = has_derivative(cls)
    # What forward (and backward, on a fallback) raised on the guesses, each text once: the second
    # tries read it, and read it again as it grows.
    errors: list[str] = []
    numbers = callsites.plain_values(cls, module, call_site_files)

    def candidates() -> Iterator[Candidate]:
        yield from _candidates(cls, module, call_site_files, config_examples, module_path, use_declared,
                               project_root, numbers)
        # Nothing ran, or only with a backward that raised (or returned a gradient of another shape
        # than the input's: a guessed size that backward does not share), or forward's signature
        # gave nothing to try (a `str` option): the package's documented examples, then its own
        # callers, build what no guess can be (a plan, the calling module, the option, a residual
        # function); then second tries, led by the errors.
        large: list[Candidate] = []  # examples whose gradcheck costs more than a guess's: tried last
        yield from callers.example_candidates(cls, module, call_site_files, SEED, deadline, large)
        yield from callers.candidates(cls, module, call_site_files, SEED,
                                      lambda recipe: make_inputs_factory(recipe, device), deadline)
        if errors:
            yield from synthesis.retry_candidates(cls, errors, numbers)
            yield from structure.retry_candidates(cls, errors)
        yield from callers.candidates(cls, module, call_site_files, SEED,
                                      lambda recipe: make_inputs_factory(recipe, device), deadline, plain_classes=True)
        yield from large

    for candidate in candidates():
        attempts += 1
        make = make_inputs_factory(candidate.recipe, device)
        error = forward_problem(cls, make)
        if error is not None and "leaf Variable" in error:
            # An in-place forward (mark_dirty) cannot take leaves: give it non-leaf tensors.
            make = make_inputs_factory(candidate.recipe, device, leaves=False)
            error = forward_problem(cls, make)
        if error is None:
            constants = _without_unwanted_grad(cls, candidate, make, device)
            if constants is not candidate:
                candidate, make = constants, make_inputs_factory(constants.recipe, device,
                                                                  leaves=getattr(make, "leaves", True))
            chosen = ChosenInputs(candidate.source, candidate.detail, make, _shapes(make()), candidate.recipe,
                                  guessed_constants=candidate.guessed_constants)
            # A guessed shape can suit forward but not what backward assumes (a vector where a
            # matrix was meant): then backward raises on a correct formula. Prefer a guess on
            # which backward runs; the user's own examples are taken as they are.
            if candidate.source != "synthesized" or not probe_backward:
                return _outcome(chosen, "", attempts, failures)
            chosen.backward_error = backward_problem(cls, make) or ""
            if fallback is not None and not chosen.backward_error and not differentiable_output(cls, make):
                # A later try on which backward "runs" only because nothing needs it (a tensor
                # argument given as an int): the fallback still says more.
                continue
            if not chosen.backward_error or swapped_axes(chosen.backward_error):
                # A gradient whose shape is the input's sizes in another order is no guessing
                # accident: with a size per dimension, it shows swapped axes (AGL903 reports it).
                chosen.backward_error = ""
                return _outcome(chosen, "", attempts, failures)
            fallback = fallback or chosen
            _keep(errors, chosen.backward_error)
            if time.monotonic() > deadline:
                break
            continue
        if candidate.source == "synthesized":
            _keep(errors, error)
        if error.startswith(FORWARD_RAISED) and len(failures) < MAX_FAILURES_KEPT \
                and all(error != kept.error for kept in failures):
            failures.append(FailedInputs(candidate.source, candidate.detail, make, error))
        if candidate.source != "synthesized" and not first_error:
            # What went wrong with the user's own example is worth more than the last guess.
            first_error = f"{candidate.source} example {candidate.detail}: {error}"
        elif not first_error:
            first_error = f"first synthesized try {candidate.detail}: {error}"
        if time.monotonic() > deadline:
            return InputsOutcome(None, f"could not build inputs (search stopped after {attempts} tries; "
                                       f"{first_error})", attempts, failures)
    if fallback is not None:
        made_complex = _complex_retry(cls, fallback, device)
        if made_complex is not None:
            return _outcome(made_complex, "", attempts, failures)
        needed = synthesis.needed_objects(cls, " ".join(errors))
        if needed:  # say what is missing, not only that backward raised
            fallback.backward_error = f"{needed} ({fallback.backward_error})"
        return _outcome(fallback, "", attempts, failures)
    if attempts == 0:
        return InputsOutcome(None, "could not build inputs (forward's signature gives nothing to try)", 0)
    needed = synthesis.needed_objects(cls, " ".join(errors) or first_error)
    if needed:
        return InputsOutcome(None, f"could not build inputs: {needed} ({first_error})", attempts, failures)
    nested = nested_apply_missing(cls, errors)
    if nested:
        return InputsOutcome(None, f"could not build inputs: {nested}", attempts, failures)
    return InputsOutcome(None, f"could not build inputs ({first_error})", attempts, failures)


MAX_ERRORS_KEPT = 200

# What the engine raises when backward returns a complex gradient for a real input.
_COMPLEX_FOR_REAL = "input_is_complex == grad_is_complex"
# Said in the inputs' detail, and read by the child, which makes gradient findings on them warnings.
MADE_COMPLEX = "real tensors made complex, since backward returned complex gradients for them"


def _complex_retry(cls: type, fallback: ChosenInputs, device: str) -> Optional[ChosenInputs]:
    """Where backward raised on every guess because it returns complex gradients for real inputs
    (a special function that computes in complex numbers, whose public wrapper promotes its
    argument first), the same guess with its real tensors made complex (real-valued complex
    numbers, as such a wrapper passes); None when backward still raises on them."""
    if _COMPLEX_FOR_REAL not in fallback.backward_error:
        return None
    recipe = _made_complex(fallback.recipe)
    make = make_inputs_factory(recipe, device)
    if forward_problem(cls, make) is not None or backward_problem(cls, make):
        return None
    return ChosenInputs(fallback.source, f"{fallback.detail}; {MADE_COMPLEX}", make, _shapes(make()), recipe,
                        guessed_constants=fallback.guessed_constants)


def _made_complex(recipe: Callable[[], tuple]) -> Callable[[], tuple]:
    def complex_recipe() -> tuple:
        raw = recipe()
        raw = raw if isinstance(raw, (tuple, list)) else (raw,)
        made = []
        for value in raw:
            wants_grad = value.wants_grad if isinstance(value, TensorSpec) else \
                value.requires_grad if isinstance(value, CapturedTensor) else True
            tensor = materialize(value) if isinstance(value, TensorSpec) else \
                value.tensor if isinstance(value, CapturedTensor) else value
            if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                made.append(CapturedTensor(tensor.to(torch.complex128), wants_grad))
            else:
                made.append(value)
        return tuple(made)

    return complex_recipe

# "Step.forward() missing 1 required positional argument: 'level'" (a nested apply), or
# "s_to_t() missing 1 required positional argument: 't_offset'" (a function forward calls).
_MISSING_ARGUMENT = re.compile(r"TypeError: (\w+)(\.forward)?\(\) missing (\d+) required positional arguments?: (.*)")


def nested_apply_missing(cls: type, errors: list[str]) -> str:
    """When forward raised on every try that it calls another Function's ``apply``, or a
    function, with an argument missing ("Step.forward() missing 1 required positional argument:
    'constant'"), no input can help: say so. It reads like a bug of the class, yet only an error
    that forward's own code shows for certain could be a finding, so this stays the reason it was
    not checked."""
    raised = [error for error in errors if error.startswith(FORWARD_RAISED)]
    matches = [_MISSING_ARGUMENT.search(error) for error in raised]
    if not raised or not all(matches) or len({match.group(0) for match in matches}) != 1:
        return ""
    other, is_forward, count, names = matches[0].groups()
    if other in (cls.__name__, "forward"):  # the class's own arguments: the guesses' fault
        return ""
    called = f"`{other}.apply`" if is_forward else f"`{other}()`"
    raised_text = f"{other}.forward()" if is_forward else f"{other}()"
    return (f"forward calls {called} with {count} argument(s) missing ({names}) on every input tried: "
            f"\"{raised_text} missing {count} required positional argument\"; a bug in "
            "forward unless a declared example shows otherwise")


def _without_unwanted_grad(cls: type, candidate: Candidate, make: Callable[[], tuple], device: str = "cpu") -> Candidate:
    """The candidate with its guessed tensors (``Candidate.guessed``) that backward gives no gradient
    (returns None for) passed without grad. Nothing said they are tensors that train: a fixed
    operator, a hyper-parameter, a tensor of levels. gradcheck would compare backward's None with
    forward's finite differences and blame a Function that means it. At least one input keeps
    requiring grad (a backward that gives none at all is judged as it is)."""
    if not candidate.guessed:
        return candidate
    # An input that forward ignores (a statistic passed for backward alone: pyro's `ewma`) gets a
    # zero derivative either way; it keeps requiring grad, which the by-design kinds read.
    ungraded = [index for index in inputs_without_gradient(cls, make)
                if index in candidate.guessed and forward_depends_on(cls, make, index)]
    graded = [index for index, value in enumerate(make()) if isinstance(value, torch.Tensor) and value.requires_grad]
    if not ungraded or len(ungraded) >= len(graded):
        return candidate
    recipe = candidate.recipe

    def without_grad(taps: bool = False) -> tuple:
        raw = recipe()
        raw = raw if isinstance(raw, (tuple, list)) else (raw,)
        return tuple(_spec_without_grad(value, taps) if index in ungraded else value for index, value in enumerate(raw))

    parameters = synthesis.forward_parameters(cls) or []
    names = tuple(parameters[index].name if index < len(parameters) else f"input {index}" for index in ungraded)
    detail = f"{candidate.detail} ({', '.join(names)} without grad: backward gives no gradient for it"
    # A constant of the op that backward gives no gradient, guessed with three dimensions or more
    # (a filter bank beside an (N, C, L) signal), is most often a few taps, (1, 1, 4): a guess as
    # large as the signal makes a filter longer than it (another padding regime, a slow gradcheck).
    # Kept where forward and backward run on the taps.
    tapped = lambda: without_grad(taps=True)  # noqa: E731
    if any(isinstance(value, TensorSpec) and len(value.shape) >= 3 and value.shape != _taps(value.shape)
           for index, value in enumerate(recipe()) if index in ungraded):
        make = make_inputs_factory(tapped, device, leaves=getattr(make, "leaves", True))
        if forward_problem(cls, make) is None and backward_problem(cls, make) is None:
            return Candidate(candidate.source, f"{detail}; taps {_taps_shown(recipe(), ungraded)})", tapped, (), names)
    return Candidate(candidate.source, f"{detail})", without_grad, (), () if candidate.shapes_known else names,
                     candidate.shapes_known)


FILTER_TAPS = 4  # a short filter's length (db2's), even, as stride-2 filter banks take


def _taps(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (1,) * (len(shape) - 1) + (FILTER_TAPS,)


def _taps_shown(raw: Any, ungraded: list[int]) -> str:
    return ", ".join(str(_taps(value.shape)) for index, value in enumerate(raw)
                     if index in ungraded and isinstance(value, TensorSpec) and len(value.shape) >= 3)


def _spec_without_grad(value: Any, taps: bool = False) -> Any:
    if isinstance(value, TensorSpec):
        if taps and len(value.shape) >= 3 and value.structure is None:
            return replace(value, shape=_taps(value.shape), requires_grad=False)
        return replace(value, requires_grad=False)
    if isinstance(value, synthesis.UnitQuaternionAt):
        return replace(value, spec=replace(value.spec, requires_grad=False))
    if isinstance(value, CapturedTensor):
        return replace(value, requires_grad=False)
    return value


def forward_depends_on(cls: type, make_inputs: Callable[[], tuple], index: int) -> bool:
    """Whether moving input ``index`` (a shift by 0.5, a doubling) changes forward's outputs."""
    try:
        with torch.no_grad():
            inputs = make_inputs()
            base = [value for value in flatten_outputs(cls.apply(*inputs)) if isinstance(value, torch.Tensor)]
            for moved in (inputs[index] + 0.5, inputs[index] * 2 + 0.25):
                arguments = list(make_inputs())
                arguments[index] = moved
                outputs = [value for value in flatten_outputs(cls.apply(*arguments)) if isinstance(value, torch.Tensor)]
                if len(outputs) != len(base) or any(o.shape != b.shape or not torch.equal(o, b)
                                                    for o, b in zip(outputs, base)):
                    return True
    except Exception:  # the user's forward, on a moved input: assume it depends
        return True
    return False


def inputs_without_gradient(cls: type, make_inputs: Callable[[], tuple]) -> list[int]:
    """Positions of the inputs requiring grad for which backward (all-ones gradients) returns None;
    empty when backward raises or nothing calls it."""
    try:
        gradients = _all_ones_backward(cls, make_inputs())
    except Exception:  # the user's code: backward_problem reports what went wrong
        return []
    return [index for index, gradient in gradients.items() if gradient is None]


def _all_ones_backward(cls: type, inputs: tuple) -> dict[int, Optional[torch.Tensor]]:
    """Position -> the gradient a plain backward (all-ones output gradients) gives each input that
    requires grad (None where backward returns None); empty when nothing calls backward."""
    with torch.enable_grad():
        outputs = [value for value in flatten_outputs(cls.apply(*inputs))
                   if isinstance(value, torch.Tensor) and value.requires_grad]
        positions = [index for index, value in enumerate(inputs) if isinstance(value, torch.Tensor) and value.requires_grad]
        if not outputs or not positions:
            return {}
        gradients = torch.autograd.grad(outputs, [inputs[index] for index in positions],
                                        [torch.ones_like(value) for value in outputs], allow_unused=True)
    return dict(zip(positions, gradients))


def _keep(errors: list[str], error: str) -> None:
    if error not in errors and len(errors) < MAX_ERRORS_KEPT:
        errors.append(error)


def _outcome(chosen: ChosenInputs, reason: str, attempts: int, failures: list[FailedInputs]) -> InputsOutcome:
    """Keep the failed candidates only when they are more trusted than the chosen one: the user's
    own example raising in forward says more than a guessed shape on which forward happens to run."""
    failures = [failed for failed in failures if SOURCE_RANK[failed.source] < SOURCE_RANK[chosen.source]]
    return InputsOutcome(chosen, reason, attempts, failures)


def _candidates(cls: type, module: Any, call_site_files: list[str], config_examples: dict,
                module_path: str, use_declared: bool, project_root: str,
                numbers: dict[int, Any]) -> Iterator[Candidate]:
    if use_declared:
        yield from declared_candidates(cls, module, config_examples, module_path)
    if cls in callers.MADE_WITH:  # what apply got where a function of the package made the class
        yield callers.MADE_WITH[cls]
    yield from callsites.candidates(cls, module, call_site_files, project_root)
    yield from structure.candidates(cls, plain_values=numbers)  # where names, docstrings or forward's code ask
    yield from synthesis.candidates(cls, numbers)


def declared_candidates(cls: type, module: Any, config_examples: dict, module_path: str) -> Iterator[Candidate]:
    for number, args in enumerate(cls.__dict__.get(EXAMPLES_ATTRIBUTE, ()) or (), 1):
        yield Candidate("declared", f"@example #{number}", _constant(args))
    mapping = getattr(module, EXAMPLES_ATTRIBUTE, None)
    if isinstance(mapping, dict):
        entries = mapping.get(cls.__qualname__, mapping.get(cls.__name__, ()))
        for number, entry in enumerate(entries or (), 1):
            yield Candidate("declared", f"{EXAMPLES_ATTRIBUTE}[{cls.__name__!r}] #{number}",
                            entry if callable(entry) else _constant(entry))
    for key, calls in config_examples.items():
        if _config_key_matches(key, cls, module_path):
            for number, call in enumerate(calls, 1):
                values = tuple(from_config_value(value) for value in call)
                yield Candidate("declared", f"config examples[{key!r}] #{number}", _constant(values))


def _config_key_matches(key: str, cls: type, module_path: str) -> bool:
    path, _, name = key.rpartition(":")
    if name not in (cls.__name__, cls.__qualname__):
        return False
    return not path or module_path.replace("\\", "/").endswith(path.replace("\\", "/").lstrip("./"))


def _constant(args: Any) -> Callable[[], tuple]:
    values = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    return lambda: values


def make_inputs_factory(recipe: Callable[[], tuple], device: str, leaves: bool = True) -> Callable[[], tuple]:
    """Fresh, identical inputs on each call: reseed, rebuild, convert (``leaves=False``: each
    tensor that requires grad is the result of an op, as in-place forwards need). The recipe's
    matrix structures are recorded on the callable (``structure.of`` reads them): the checks
    that compare with finite differences stay on that set."""

    def make_inputs() -> tuple:
        torch.manual_seed(SEED)
        raw = recipe()
        if not isinstance(raw, (tuple, list)):
            raw = (raw,)
        prepared = tuple(prepare(value, device) for value in raw)
        if leaves:
            return prepared
        return tuple(value.clone() if isinstance(value, torch.Tensor) and value.requires_grad else value
                     for value in prepared)

    make_inputs.structures = structure.structures_of(recipe)  # type: ignore[attr-defined]
    make_inputs.leaves = leaves  # type: ignore[attr-defined]
    return make_inputs


def prepare(value: Any, device: str) -> Any:
    """A tensor for gradcheck: float64 (complex128), requiring grad, on ``device``, not shared."""
    wants_grad = True
    if isinstance(value, TensorSpec):
        wants_grad = value.wants_grad
        value = materialize(value)
    elif isinstance(value, synthesis.UnitQuaternionAt):
        wants_grad = value.spec.wants_grad
        value = _with_unit_quaternion(materialize(value.spec), value.start)
    elif isinstance(value, CapturedTensor):
        wants_grad = value.requires_grad
        value = value.tensor
    elif isinstance(value, synthesis.TorchDtype):
        return getattr(torch, value.name)
    elif isinstance(value, synthesis.NewDict):
        return {}
    elif isinstance(value, synthesis.RunDevice):
        return torch.device(device)
    elif isinstance(value, synthesis.SegmentLengths):
        return torch.tensor(value.lengths, dtype=getattr(torch, value.dtype), device=device)
    elif isinstance(value, synthesis.BuiltObject):
        instance = objects.built(value.klass)
        if instance is None:
            raise TypeError(f"no {value.klass.__name__} could be built from its constructor")
        return instance
    if not isinstance(value, torch.Tensor):
        return value
    tensor = value.detach().clone().to(device)
    if tensor.is_complex():
        return tensor.to(torch.complex128).requires_grad_(wants_grad)
    if tensor.is_floating_point():
        return tensor.to(torch.float64).requires_grad_(wants_grad)
    return tensor


def _with_unit_quaternion(tensor: torch.Tensor, start: int) -> torch.Tensor:
    quaternion = tensor[..., start:start + 4]
    tensor[..., start:start + 4] = quaternion / quaternion.norm(dim=-1, keepdim=True)
    return tensor


def materialize(spec: TensorSpec) -> torch.Tensor:
    dtype = getattr(torch, spec.dtype)
    if spec.dtype == "bool":  # `low` set: every element that value
        return torch.rand(spec.shape) > 0.5 if spec.low is None else torch.full(spec.shape, bool(spec.low))
    if spec.structure is not None:
        return structure.materialize(spec).to(dtype)
    if spec.is_floating:
        low = -1.0 if spec.low is None else spec.low
        high = 1.0 if spec.high is None else spec.high
        return (torch.rand(spec.shape, dtype=torch.float64) * (high - low) + low).to(dtype)
    low = 0 if spec.low is None else int(spec.low)
    high = 4 if spec.high is None else int(spec.high)
    return torch.randint(low, high, spec.shape, dtype=dtype)


FORWARD_RAISED = "forward raised "


def forward_problem(cls: type, make_inputs: Callable[[], tuple]) -> Optional[str]:
    """None when forward runs and its floating outputs are finite (NaN from log(-x) means the
    values are outside forward's domain: gradcheck on them would only report noise)."""
    try:
        with torch.enable_grad():
            output = cls.apply(*make_inputs())
    except Exception as error:  # the user's forward: anything can go wrong
        return f"{FORWARD_RAISED}{type(error).__name__}: {_first_line(error)}"
    floating = [value for value in flatten_outputs(output)
                if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())]
    if not all(bool(torch.isfinite(t.detach()).all()) for t in floating):
        return "forward returned non-finite values (NaN or inf)"
    return None


def backward_problem(cls: type, make_inputs: Callable[[], tuple]) -> Optional[str]:
    """None when a plain backward (all-ones gradients) runs."""
    try:
        _all_ones_backward(cls, make_inputs())
    except Exception as error:
        return f"backward raised {type(error).__name__}: {_first_line(error)}"
    return None


def differentiable_output(cls: type, make_inputs: Callable[[], tuple]) -> bool:
    """forward returns a tensor that requires grad (else backward is never called)."""
    try:
        with torch.enable_grad():
            outputs = flatten_outputs(cls.apply(*make_inputs()))
    except Exception:  # the user's forward
        return False
    return any(isinstance(value, torch.Tensor) and value.requires_grad for value in outputs)


_INVALID_GRADIENT_SHAPE = re.compile(r"invalid gradient at index \d+ - got \[([\d, ]*)\] but expected shape "
                                     r"compatible with \[([\d, ]*)\]")


def swapped_axes(backward_error: str) -> bool:
    """autograd rejected a gradient whose shape holds the input's sizes in another order."""
    match = _INVALID_GRADIENT_SHAPE.search(backward_error)
    if not match:
        return False
    got, expected = ([int(size) for size in group.split(",") if size.strip()] for group in match.groups())
    return got != expected and sorted(got) == sorted(expected)


def has_derivative(cls: type) -> bool:
    """The class defines backward or vjp (an abstract base may define neither)."""
    base = torch.autograd.Function
    return getattr(cls, "backward", None) is not base.backward or getattr(cls, "vjp", None) is not base.vjp


def flatten_outputs(output: Any) -> list:
    return list(output) if isinstance(output, (tuple, list)) else [output]


def _shapes(inputs: Iterable[Any]) -> str:
    parts = []
    for value in inputs:
        if isinstance(value, torch.Tensor):
            dtype = "" if value.is_floating_point() else f" {str(value.dtype).replace('torch.', '')}"
            parts.append(f"{tuple(value.shape)}{dtype}")
        else:
            parts.append(_shown(value))
    return ", ".join(parts)


def _shown(value: Any) -> str:
    """A plain value as written; an object by its type (a default repr's address differs per run)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    text = repr(value)
    if type(value).__repr__ is object.__repr__ or len(text) > MAX_SHOWN_VALUE:
        return f"a {type(value).__name__}"
    return text


MAX_SHOWN_VALUE = 80


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else ""
