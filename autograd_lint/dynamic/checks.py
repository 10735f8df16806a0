"""The runtime rules, run on one Function class with inputs that make its forward work.

- AGL903: call backward directly (``node.apply(*grads)`` under ``no_grad``, on fresh inputs:
  docs/runtime-mechanisms.md, M3) and compare the raw returned values with the inputs: count,
  shape (a broadcast-reducible gradient is fine), dtype and device, before autograd checks or
  casts them.
- AGL901: ``gradcheck`` in slow mode (fast mode can miss errors of 0.5-1%:
  docs/runtime-mechanisms.md, M9); the message names the input and the largest difference
  between the analytical and the numerical Jacobian, computed here because gradcheck's own
  error does not say which input is worst.
  When it fails as a straight-through estimator or a gradient modifier does (``by_design``:
  forward piecewise constant in the input, or returning it unchanged), the finding is AGL908
  (info, opt-in) instead. A forward that computes in float32 is checked at float32 precision.
  On structured inputs (a covariance, a Cholesky factor: ``structure``), gradcheck and
  gradgradcheck run on forward composed with the projection onto their set
  (docs/runtime-mechanisms.md, M15).
- AGL909 (``by_design.nonlinearity``): backward is linear in its gradient, probed with signed
  gradients (gradcheck's are one-hot, non-negative); run after gradcheck passes.
- AGL902: ``gradgradcheck``, only when gradcheck passed and backward is not ``once_differentiable``.
- AGL905: backward replayed on the same gradient values laid out non-contiguously (transposed,
  expanded, every other element: what autograd passes after ``y.t()``, ``y.sum()``,
  ``torch.stack``), against the contiguous ones gradcheck uses (``layouts``).
- AGL904 (``compare_devices``): the same checks on CUDA after they passed on the CPU.
- AGL907 (undefined_grads.py): backward with an unused output's gradient left undefined (None);
  when it fails, gradcheck (whose own undefined-gradient test would fail the same way) is skipped.
- AGL906 (autocast_check.py): forward under CPU autocast (bfloat16), backward after it.
These two need neither a deterministic forward nor gradcheck, so they run first.
A forward that gives different outputs for the same inputs (dropout) is checked with the random
generators reseeded before each forward call (``reseeding``), when that makes forward and backward
repeatable; otherwise it is not gradchecked at all: finite differences of a random function are noise.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional

import torch
from torch.autograd.gradcheck import GradcheckError

from autograd_lint.dynamic import by_design, reseeding, structure
from autograd_lint.dynamic.autocast_check import autocast_failure
from autograd_lint.dynamic.inputs import flatten_outputs, has_derivative  # noqa: F401 (re-exported)
from autograd_lint.dynamic.layouts import NotReplayable, layout_differences
from autograd_lint.dynamic.undefined_grads import undefined_gradient_failure

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3
# autograd's error when a backward runs twice on one graph: a backward that calls
# ``torch.autograd.grad`` on a graph forward built, without ``retain_graph`` (lxt's
# ``layer_norm_grad_fn``), works once per forward, which is how training calls it; gradcheck calls
# it once per output element of one forward. Not a wrong gradient: checked one forward a row.
RUNS_ONCE = "backward through the graph a second time"
ONCE_NOTE = ("gradcheck's repeated backward: backward runs once per forward (gradcheck raised \"Trying to "
             "backward through the graph a second time\": it frees the graph it differentiates), so its "
             "Jacobian was built from one fresh forward per row and compared with finite differences instead; "
             "a second backward on one forward (retain_graph=True, two losses) raises")


@dataclass(frozen=True)
class Tolerances:
    eps: float
    atol: float
    rtol: float


PRECISE = Tolerances(EPS, ATOL, RTOL)
# A forward that casts its float64 inputs to float32 (``x.float()``) rounds at 1e-7 relative:
# central differences at eps=1e-6 are noise there (docs/runtime-mechanisms.md, F16), at 1e-3
# they are not, and a wrong formula still misses by far more than 1e-2.
FLOAT32 = Tolerances(1e-3, 1e-3, 1e-2)
# Where gradcheck fails at PRECISE, a second look with wide steps and 2% tolerance: a forward that
# rounds inside (float32 values in a float64 tensor), a derivative kept in 8 bits or stopped by the
# value's convergence test passes it, and a wrong formula (a factor, a sign, a missing term, a
# transpose) still misses by far more.
COARSE = Tolerances(1e-3, 5e-3, 2e-2)


@dataclass
class GradcheckOutcome:
    message: str = ""  # AGL901's message when gradcheck failed
    by_design: Optional[by_design.ByDesign] = None  # it failed, as a surrogate or modifier does (AGL908)
    skip: str = ""  # why gradcheck cannot judge these inputs
    tolerances: Tolerances = PRECISE
    # How gradcheck was replaced where backward runs once per forward (``RUNS_ONCE``), for the report.
    note: str = ""
    # Failing inputs that forward does not read (finite differences all zero) and backward gives a
    # gradient: the class presumes a coupling with another input (``factor`` the factorization of
    # ``a``) or a surrogate; on guessed inputs that is unknown, not a bug (judging.py).
    unread: tuple[int, ...] = ()
    # The failing inputs whose every disagreeing element forward ignores (``_fails_only_where_ignored``).
    ignored: tuple[int, ...] = ()
    # gradcheck fails at its own tolerances and passes at COARSE ones: a precision limit (rounding
    # inside forward, a quantized derivative) or a small bug; no certain error (the report step).
    within_coarse: bool = False


@dataclass
class RuntimeFinding:
    code: str
    message: str
    # AGL903 only: what was wrong ("count", "shape", "dtype", "device", "type"), so that the
    # parent can tell which static finding explains it (dedupe.py) without parsing the message.
    kinds: tuple[str, ...] = ()
    # For a runtime code graded by harm (AGL906): this finding's severity; empty: the catalogue's.
    level: str = ""
    # AGL903: every wrong shape is a gradient for a smaller input that broadcasts to the one
    # given (a 0-d gradient for a (3, 4) input): on guessed shapes, the guess's doing (judging.py).
    smaller_inputs_only: bool = False
    # AGL903: every problem is a gradient for an input that is not a tensor: those inputs.
    non_tensor_inputs: tuple[int, ...] = ()
    # AGL901: the failing inputs that forward does not read (``GradcheckOutcome.unread``).
    unread_inputs: tuple[int, ...] = ()
    # AGL901: the failing inputs whose disagreeing elements forward ignores (a padding).
    ignored_elements: tuple[int, ...] = ()
    # AGL901: square matrices (no structure known) with which gradcheck passes once symmetric.
    symmetric_passes: tuple[int, ...] = ()


@dataclass
class CheckReport:
    findings: list[RuntimeFinding] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)  # the checks that ran to a verdict
    skipped: list[str] = field(default_factory=list)  # "gradgradcheck: once_differentiable", ...

    def codes(self) -> set[str]:
        return {finding.code for finding in self.findings}


def is_once_differentiable(cls: type) -> bool:
    """``@once_differentiable`` wraps backward in a function defined in torch/autograd/function.py,
    outermost or under another decorator that keeps ``__wrapped__`` (``torch.amp.custom_bwd``)."""
    for name in ("backward", "vjp"):
        function = getattr(cls, name, None)
        for _ in range(MAX_DECORATORS):
            code = getattr(function, "__code__", None)
            if code is None:
                break
            if code.co_name == "wrapper" and code.co_filename.endswith(os.path.join("autograd", "function.py")):
                return True
            function = getattr(function, "__wrapped__", None)
    return False


MAX_DECORATORS = 8


def run_checks(cls: type, make_inputs: Callable[[], tuple], names: list[str],
               guessed_backward_error: str = "") -> CheckReport:
    """``guessed_backward_error``: the inputs are guesses on which backward raised this (no guess
    let it run). Its raw result is still checked (AGL903: what it returns, seen directly), but
    not gradcheck: a guessed tensor for a `transport` or a `process_group` makes a correct
    backward raise as easily as a buggy one.

    Grad mode is switched on for the checks: a module that runs ``torch.set_grad_enabled(False)``
    at import would otherwise make gradcheck compare against nothing (a false AGL901)."""
    with torch.enable_grad():
        randomness = _randomness(cls, make_inputs)
        if randomness == "forward":
            with reseeding.reseeded_forward(cls):
                report = _run_checks(cls, make_inputs, names, guessed_backward_error)
            report.skipped.insert(0, reseeding.NOTE)
            for finding in report.findings:
                if finding.code in ("AGL901", "AGL902"):
                    finding.message += f" ({reseeding.FINDING_NOTE})"
            return report
        return _run_checks(cls, make_inputs, names, guessed_backward_error,
                           unrepeatable=reseeding.BACKWARD_DRAWS if randomness == "backward" else "")


def _randomness(cls: type, make_inputs: Callable[[], tuple]) -> str:
    """"forward": forward draws random numbers, and with them fixed by reseeding (reseeding.py)
    forward and backward are repeatable; "backward": backward draws numbers of its own; "": forward
    is repeatable as it is, or nothing can be told (the plain path reports what it raises)."""
    try:
        if is_repeatable(cls, make_inputs):
            return ""
        with reseeding.reseeded_forward(cls):
            if not is_repeatable(cls, make_inputs):
                return ""
            repeatable = reseeding.backward_is_repeatable(cls, make_inputs, flatten_outputs)
            return "" if repeatable is None else "forward" if repeatable else "backward"
    except Exception:  # noqa: BLE001 - user code
        return ""


def _run_checks(cls: type, make_inputs: Callable[[], tuple], names: list[str],
                guessed_backward_error: str, unrepeatable: str = "") -> CheckReport:
    report = CheckReport()
    if not has_differentiable_output(cls, make_inputs):
        report.skipped.append("all checks: forward returns no differentiable output (backward is never called)")
        return report
    undefined = None
    if not guessed_backward_error:  # on guessed inputs a backward failure tells nothing
        undefined = undefined_gradient_failure(cls, make_inputs)
        report.ran.append("undefined gradients")
        if undefined:
            report.findings.append(RuntimeFinding("AGL907", undefined))
        autocast = autocast_failure(cls, make_inputs)
        report.ran.append("autocast")
        if autocast:
            report.findings.append(RuntimeFinding("AGL906", autocast.message,
                                                  level="error" if autocast.declares_autocast else "warning"))
    if unrepeatable or not is_repeatable(cls, make_inputs):
        report.skipped.append(f"gradcheck: {unrepeatable}" if unrepeatable else
                              "gradcheck: forward is not deterministic (the same inputs gave different "
                              "outputs: randomness, or inputs changed in place)")
        return report
    raw_problems, blocking = raw_backward_problems(cls, make_inputs, names)
    report.ran.append("raw backward")
    if raw_problems:
        report.findings.append(RuntimeFinding("AGL903", "; ".join(problem.text for problem in raw_problems),
                                              tuple(dict.fromkeys(problem.kind for problem in raw_problems)),
                                              smaller_inputs_only=all(p.for_smaller_input for p in raw_problems),
                                              non_tensor_inputs=_non_tensor_inputs(raw_problems)))
    if blocking:  # autograd itself would raise: gradcheck would only repeat the same error
        report.skipped.append("gradcheck: backward's result is rejected by autograd (AGL903)")
        return report
    if guessed_backward_error.startswith("needs "):  # an object no guess can be (inputs.choose_inputs)
        report.skipped.append(f"gradcheck: {guessed_backward_error}")
        return report
    if guessed_backward_error:
        report.skipped.append(f"gradcheck: backward raised on every synthesized input ({guessed_backward_error}), "
                              "so a failure would not tell a bug from a wrong guess")
        return report
    check_layouts(cls, make_inputs, report)
    if undefined:
        report.skipped.append("gradcheck: backward fails on an undefined gradient (AGL907), which gradcheck's "
                              "undefined-gradient test would only repeat")
        return report
    outcome = gradcheck_outcome(cls, make_inputs, names)
    if outcome.message and outcome.by_design is None:
        make_inputs, outcome = _on_symmetric_companions(cls, make_inputs, names, outcome, report)
    if outcome.skip:
        report.skipped.append(f"gradcheck: {outcome.skip}")
        return report
    report.ran.append("gradcheck")
    if outcome.note:
        report.skipped.append(outcome.note)
    if outcome.by_design is not None:
        message = outcome.by_design.message
        nonlinear = by_design.nonlinearity(cls, make_inputs, names, outcome.tolerances is not PRECISE)
        report.ran.append("linearity")
        if nonlinear:
            message += f"; {nonlinear}"
        report.findings.append(RuntimeFinding("AGL908", message))
        report.skipped.append("gradgradcheck: the gradient is not the derivative, by design (AGL908)")
        return report
    if outcome.message:
        documented = by_design.documented_mismatch(cls)
        if documented:  # the author says so in words: worth a look, not an error
            report.findings.append(RuntimeFinding(
                "AGL901", f"{outcome.message} (the class documents it: \"{documented}\"; if the gradient is "
                          "meant to differ, suppress this with that reason)", level="warning",
                unread_inputs=outcome.unread))
        elif structure.calls_general_eigensolver(cls):
            invariant = _phase_invariant_verdict(cls, make_inputs)
            if invariant is True:  # the raw failure was the free phase: backward is right
                report.skipped.append(
                    "gradcheck of the raw eigenvectors fails, as it does for a correct backward (`eig` fixes each "
                    "one only up to a phase); on |v|^2 of them, which does not depend on the phase, it passes")
                report.skipped.append("gradgradcheck: not run on eigenvectors whose phase is free")
                return report
            if invariant is False:
                report.findings.append(RuntimeFinding(
                    "AGL901", "gradcheck fails on |v|^2 of the eigenvectors forward returns, a function that does "
                              "not depend on the phase `eig` leaves free, so the gradient itself is wrong and "
                              f"training through them follows it (raw eigenvectors: {outcome.message})",
                    unread_inputs=outcome.unread))
            else:
                report.findings.append(RuntimeFinding(
                    "AGL901", f"{outcome.message} (not certain: forward calls `eig`, whose eigenvectors are defined "
                              "up to a phase each, so gradcheck of raw eigenvectors fails for a correct backward; "
                              "check a phase-invariant function of them, or the eigenvalues)", level="warning",
                    unread_inputs=outcome.unread))
        else:
            report.findings.append(RuntimeFinding("AGL901", outcome.message, unread_inputs=outcome.unread,
                                                  level="warning" if outcome.within_coarse else "",
                                                  ignored_elements=outcome.ignored,
                                                  symmetric_passes=_passes_when_symmetric(cls, make_inputs, names)))
        report.skipped.append("gradgradcheck: gradcheck failed")
        return report
    nonlinear = by_design.nonlinearity(cls, make_inputs, names, outcome.tolerances is not PRECISE)
    report.ran.append("linearity")
    if nonlinear:
        kind = by_design.known_modifier(cls, make_inputs, differentiable_outputs(cls))
        attribution = "" if kind else by_design.attribution_rule(cls, make_inputs, differentiable_outputs(cls))
        if kind:  # a gradient clipper over an identity forward: clipping is its purpose
            report.findings.append(RuntimeFinding("AGL908", f"{kind} (forward {_forward_shape(kind)}): {nonlinear}"))
        elif attribution:  # guided backpropagation: dropping the negative gradient is the method
            report.findings.append(RuntimeFinding("AGL908", f"{attribution}: {nonlinear}"))
        else:
            report.findings.append(RuntimeFinding("AGL909", nonlinear))
            report.skipped.append("gradgradcheck: backward is not linear in its gradient (AGL909)")
            return report
    if raw_problems:  # a float32 gradient: second derivatives lose the precision gradgradcheck needs
        report.skipped.append("gradgradcheck: backward's gradients are not float64 (AGL903)")
        return report
    if outcome.tolerances is not PRECISE:
        report.skipped.append("gradgradcheck: forward computes in float32, below the precision second "
                              "derivatives need")
        return report
    if is_once_differentiable(cls):
        report.skipped.append("gradgradcheck: backward is @once_differentiable")
        return report
    if outcome.note:
        report.skipped.append("gradgradcheck: backward runs once per forward, and gradgradcheck differentiates "
                              "it repeatedly on one graph")
        return report
    try:
        failure = gradgradcheck_failure(cls, make_inputs, names)
    except DeviceOnly as only:
        report.skipped.append(f"gradgradcheck: {only}")
        return report
    report.ran.append("gradgradcheck")
    if failure:
        relevance = _relevance_rule(cls, differentiable_outputs(cls, make_inputs), make_inputs(), names)
        if relevance:
            # gradcheck passed because the rule equals the gradient on these inputs (lxt's
            # epsilon_lrp_fn over a guessed identity); relevance is not differentiated again.
            report.findings.append(RuntimeFinding("AGL908", f"{relevance}; gradcheck passed on these inputs (the rule "
                                                            f"equals the derivative there) and {failure}: relevance "
                                                            "is not meant to be differentiated again"))
        else:
            report.findings.append(RuntimeFinding("AGL902", failure))
    return report


def _relevance_rule(cls: type, function: Callable[..., Any], inputs: tuple, names: list[str],
                    jacobians: Optional[dict[int, tuple[torch.Tensor, torch.Tensor]]] = None) -> str:
    """``by_design.relevance_propagation`` on backward's and forward's Jacobians for every float
    input that requires grad (computed here unless given)."""
    if not by_design.documents_relevance(cls):
        return ""  # words first: the Jacobians cost a backward per output element
    if jacobians is None:
        try:
            jacobians = jacobians_by_input(function, inputs)
        except Exception:
            return ""
    return by_design.relevance_propagation(cls, function, inputs, {index: pair[0] for index, pair in jacobians.items()},
                                           {index: pair[1] for index, pair in jacobians.items()}, names)


def _on_symmetric_companions(cls: type, make_inputs: Callable[[], tuple], names: list[str],
                             outcome: GradcheckOutcome, report: CheckReport
                             ) -> tuple[Callable[[], tuple], GradcheckOutcome]:
    """gradcheck failed on structured inputs beside which a plain square matrix of the same size
    was guessed (a ``middle`` beside a ``chol``): when it passes with that matrix symmetric, the
    general matrix was the guess's mistake, not backward's; the rest runs on the symmetric one."""
    inputs = make_inputs()
    companions = structure.symmetric_companions(inputs, structure.of(make_inputs))
    if not companions:
        return make_inputs, outcome
    symmetric = structure.with_symmetric(make_inputs, companions)
    retried = gradcheck_outcome(cls, symmetric, names)
    if retried.message or retried.skip or retried.by_design is not None:
        return make_inputs, outcome
    which = ", ".join(f"`{names[index]}`" if index < len(names) else f"input {index}" for index in companions)
    beside = structure.describe(structure.of(make_inputs), names)
    report.skipped.append(f"gradcheck on a general {which}: it fails there and passes once {which} is symmetric, "
                          f"like the structured inputs beside it ({beside}); "
                          "taken for a wrong guess, so the checks ran on the symmetric one")
    return symmetric, retried


def _passes_when_symmetric(cls: type, make_inputs: Callable[[], tuple], names: list[str]) -> tuple[int, ...]:
    """The plain square float matrices among the inputs (no structure known for them) with which
    gradcheck passes once they are symmetric: a backward derived for a covariance or a Gram
    matrix assumes it. Whether the real inputs are symmetric is the caller's to say (judging.py
    makes it a warning on guessed inputs only)."""
    structures = structure.of(make_inputs)
    inputs = make_inputs()
    square = [index for index, value in enumerate(inputs)
              if (index >= len(structures) or not structures[index]) and isinstance(value, torch.Tensor)
              and value.is_floating_point() and value.requires_grad and value.dim() >= 2
              and value.shape[-1] == value.shape[-2]]
    if not square:
        return ()
    try:
        retried = gradcheck_outcome(cls, structure.with_symmetric(make_inputs, square), names)
    except Exception:  # noqa: BLE001 - user code
        return ()
    return () if retried.message or retried.skip or retried.by_design is not None else tuple(square)


def _forward_shape(kind: str) -> str:
    return "returns an input unchanged" if kind == "gradient modifier" else "is piecewise constant"


def check_layouts(cls: type, make_inputs: Callable[[], tuple], report: CheckReport) -> None:
    """AGL905: one finding per output whose gradient, laid out as autograd may pass it, makes
    backward return something else (kind "values") or raise (kind "raises")."""
    try:
        differences = layout_differences(cls, make_inputs)
    except NotReplayable as reason:
        report.skipped.append(f"strided gradients: {reason}")
        return
    report.ran.append("strided gradients")
    for difference in differences:
        report.findings.append(RuntimeFinding("AGL905", difference.describe(), (difference.kind,)))


def compare_devices(cpu: CheckReport, cuda: CheckReport) -> list[RuntimeFinding]:
    """AGL904 for each check that passed on the CPU and failed on CUDA."""
    cpu_codes = cpu.codes()
    return [RuntimeFinding("AGL904", f"passes on CPU, fails on CUDA: {finding.message}")
            for finding in cuda.findings if finding.code not in cpu_codes]


def differentiable_outputs(cls: type, make_inputs: Optional[Callable[[], tuple]] = None) -> Callable[..., Any]:
    """``cls.apply`` keeping only floating tensor outputs (what gradcheck can compare); with
    ``make_inputs``, also without those forward marks non-differentiable (kornia's
    ``_NullSpaceBasis`` returns S and V only to save them): gradcheck leaves them out, and so must
    the Jacobians computed here, whose finite differences would see them move."""
    keep: Optional[list[bool]] = None
    if make_inputs is not None:
        try:
            with torch.enable_grad():
                keep = [value.requires_grad for value in _floating(flatten_outputs(cls.apply(*make_inputs())))]
        except Exception:  # forward's failures are the checks' to report
            keep = None
        if keep is not None and not any(keep):
            keep = None

    def apply(*inputs: Any) -> Any:
        outputs = _floating(flatten_outputs(cls.apply(*inputs)))
        if keep is not None and len(keep) == len(outputs):
            outputs = tuple(value for value, kept in zip(outputs, keep) if kept)
        return outputs[0] if len(outputs) == 1 else outputs

    return apply


def _floating(values: list) -> tuple:
    return tuple(value for value in values
                 if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()))


def has_differentiable_output(cls: type, make_inputs: Callable[[], tuple]) -> bool:
    with torch.enable_grad():
        outputs = flatten_outputs(cls.apply(*make_inputs()))
    return any(isinstance(value, torch.Tensor) and value.requires_grad for value in outputs)


def is_repeatable(cls: type, make_inputs: Callable[[], tuple]) -> bool:
    """Forward twice on the very same input objects, as gradcheck calls it: equal outputs?
    (Catches random forwards, and forwards that change their inputs in place.)"""
    inputs = make_inputs()
    with torch.no_grad():
        first = [value.clone() if isinstance(value, torch.Tensor) else value
                 for value in flatten_outputs(cls.apply(*inputs))]
        second = flatten_outputs(cls.apply(*inputs))
    if len(first) != len(second):
        return False
    for a, b in zip(first, second):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or not torch.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True):
                return False
    return True


class Problem(NamedTuple):
    """One thing wrong with backward's raw result (AGL903)."""

    kind: str  # one of dedupe.AGL903_KINDS
    text: str
    # A wrong shape that is a smaller input's, broadcasting to the one given (0-d for (3, 4)).
    for_smaller_input: bool = False
    # A gradient for this input, which is not a tensor.
    non_tensor_input: Optional[int] = None


def _non_tensor_inputs(problems: list[Problem]) -> tuple[int, ...]:
    """The inputs that get a gradient though they are not tensors, when that is every problem."""
    if any(problem.non_tensor_input is None for problem in problems):
        return ()
    return tuple(problem.non_tensor_input for problem in problems if problem.non_tensor_input is not None)


def raw_backward_problems(cls: type, make_inputs: Callable[[], tuple],
                          names: list[str]) -> tuple[list[Problem], bool]:
    """What is wrong with backward's raw result as (kind, text) pairs, and whether autograd would
    reject it (vs. cast it)."""
    inputs = make_inputs()
    with torch.enable_grad():
        outputs = flatten_outputs(cls.apply(*inputs))
    node = next((value.grad_fn for value in outputs
                 if isinstance(value, torch.Tensor) and value.grad_fn is not None
                 and getattr(type(value.grad_fn), "_forward_cls", None) is cls), None)
    if node is None:
        return [], False
    grads = [_grad_for(value) for value in outputs]
    try:
        with torch.no_grad():
            result = node.apply(*grads)
    except Exception:  # the user's backward failed: gradcheck reports it (AGL901)
        return [], False
    returned = result if isinstance(result, tuple) else (result,)
    problems: list[Problem] = []
    blocking = False
    expected = len(node.needs_input_grad)
    extra = returned[expected:]
    if len(returned) < expected or any(value is not None for value in extra):
        problems.append(Problem("count", f"backward returned {len(returned)} value{'s' * (len(returned) != 1)} "
                                  f"for {expected} input{'s' * (expected != 1)}"))
        return problems, True
    for index, (value, grad) in enumerate(zip(inputs, returned)):
        what = _input_name(index, names)
        if grad is None:
            continue
        if not isinstance(value, torch.Tensor):
            problems.append(Problem("type", f"gradient {index} is not None but {what} is not a tensor",
                                    non_tensor_input=index))
            blocking = True
            continue
        if not value.requires_grad:
            continue  # autograd never looks at it (silently): not a wrong result for this call
        if not isinstance(grad, torch.Tensor):
            problems.append(Problem("type", f"gradient for {what} is a {type(grad).__name__}, not a tensor"))
            blocking = True
            continue
        if grad.shape != value.shape and not _reducible(grad.shape, value.shape):
            swapped = sorted(grad.shape) == sorted(value.shape)
            smaller = _broadcasts_to(grad.shape, value.shape)
            problems.append(Problem("shape", f"gradient for {what} has shape {tuple(grad.shape)}, "
                                             f"the input {tuple(value.shape)}"
                                             + (" (the same sizes in another order: axes swapped)" if swapped else "")
                                             + (", the shape of a smaller input that broadcasts to it"
                                                if smaller else ""), smaller))
            blocking = True
        if grad.is_complex() and not value.is_complex():
            # The engine refuses a complex gradient for a real input ("Expected isFloatingType(grad...)
            # || (input_is_complex == grad_is_complex)"): a crash, not a silent cast.
            problems.append(Problem("dtype", f"gradient for {what} is {_dtype(grad)}, the input {_dtype(value)} "
                                      "(autograd raises: a complex gradient for a real input)"))
            blocking = True
        elif grad.dtype != value.dtype and not _cast_back(grad, value, outputs):
            problems.append(Problem("dtype", f"gradient for {what} is {_dtype(grad)}, the input {_dtype(value)} "
                                      "(autograd casts it silently)"))
        if grad.device != value.device:
            problems.append(Problem("device", f"gradient for {what} is on {grad.device}, the input on {value.device}"))
            blocking = True
    return problems, blocking


def _broadcasts_to(smaller: torch.Size, shape: torch.Size) -> bool:
    if smaller.numel() >= shape.numel():
        return False
    try:
        return torch.broadcast_shapes(smaller, shape) == shape
    except RuntimeError:
        return False


def _cast_back(grad: torch.Tensor, value: torch.Tensor, outputs: list) -> bool:
    """A floating gradient in a dtype that forward itself cast to (``x.float()`` on a float64
    input): autograd casts it back to the input's dtype, and no precision is lost that forward
    had not already dropped. A complex gradient for a real input (autograd raises), or an integer
    one (truncated), is not this."""
    if not (grad.is_floating_point() and value.is_floating_point()):
        return False
    cast_to = {output.dtype for output in outputs if isinstance(output, torch.Tensor)
               and output.is_floating_point() and output.dtype != value.dtype}
    return grad.dtype in cast_to


def _grad_for(output: Any) -> Any:
    if not isinstance(output, torch.Tensor):
        return None
    if output.requires_grad and (output.is_floating_point() or output.is_complex()):
        return torch.randn_like(output)
    return torch.zeros_like(output)


def _reducible(grad_shape: torch.Size, input_shape: torch.Size) -> bool:
    """PyTorch sums a gradient that the input broadcasts to back down to the input's shape."""
    try:
        return torch.broadcast_shapes(input_shape, grad_shape) == grad_shape
    except RuntimeError:
        return False


def gradcheck_outcome(cls: type, make_inputs: Callable[[], tuple], names: list[str]) -> GradcheckOutcome:
    """gradcheck's verdict on ``make_inputs``; on structured inputs (``structure.of``), of forward
    composed with the projection onto their set (structure.py says why)."""
    outcome = _gradcheck_outcome(cls, make_inputs, names)
    if outcome.message:
        outcome.message += structure.note(structure.of(make_inputs), names)
    return outcome


def _gradcheck_outcome(cls: type, make_inputs: Callable[[], tuple], names: list[str]) -> GradcheckOutcome:
    function = structure.project(differentiable_outputs(cls, make_inputs), structure.of(make_inputs))
    inputs = make_inputs()
    with torch.no_grad():
        outputs = _as_tuple(function(*inputs))
    tolerances = _tolerances(inputs, outputs)
    if tolerances is None:
        return GradcheckOutcome(skip="forward returns float16 or bfloat16 for float64 inputs: finite "
                                     "differences cannot check it")
    bad = _first_nonfinite(outputs)
    if bad is not None:
        output, element, value = bad
        return GradcheckOutcome(skip=f"forward returns {value} at output {output} element {element} on these "
                                     "inputs (outside its domain?), so finite differences are meaningless")
    try:
        passed = _gradcheck_at(function, make_inputs, tolerances)
    except Exception as error:  # backward (or forward under perturbation) raised
        if RUNS_ONCE in str(error):
            return _judged_once_per_forward(cls, function, make_inputs, names, tolerances)
        only = device_only(error)
        if only:
            return GradcheckOutcome(skip=f"its code {only}, and this run is on the CPU")
        return GradcheckOutcome(f"gradcheck raised {type(error).__name__}: {_first_line(error)}",
                                tolerances=tolerances)
    if passed:
        return GradcheckOutcome(tolerances=tolerances)
    jacobians = jacobians_by_input(function, make_inputs(), tolerances.eps)
    outcome = _judged(cls, function, make_inputs, names, inputs, tolerances, jacobians)
    if outcome.message and _passes_coarse(function, make_inputs):
        outcome.within_coarse = True
        outcome.message += (f" (within {COARSE.rtol:.0%}: gradcheck passes with steps of {COARSE.eps:g} and a "
                            f"{COARSE.rtol:.0%} tolerance, so this may be a precision limit, values rounded inside "
                            "forward or a derivative computed or stored less precisely, rather than a wrong "
                            "formula)")
    return outcome


def _gradcheck_at(function: Callable[..., Any], make_inputs: Callable[[], tuple], tolerances: Tolerances) -> bool:
    """gradcheck's verdict at ``tolerances`` (it raises what backward, or forward under a step, raises)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bool(torch.autograd.gradcheck(*over_tensors(function, make_inputs()), eps=tolerances.eps,
                                             atol=tolerances.atol, rtol=tolerances.rtol, fast_mode=False,
                                             raise_exception=False))


def _phase_invariant_verdict(cls: type, make_inputs: Callable[[], tuple]) -> Optional[bool]:
    """gradcheck of forward composed with |v|^2 on each complex square output (eigenvectors, whose
    phase `eig` leaves free; torch's own `linalg.eig` gives gradients only for losses that do not
    depend on it). None when forward returns no such output or anything raises: no verdict."""
    function = structure.project(differentiable_outputs(cls, make_inputs), structure.of(make_inputs))
    try:
        with torch.no_grad():
            if not any(_eigenvector_like(output) for output in _as_tuple(function(*make_inputs()))):
                return None
    except Exception:  # noqa: BLE001 - forward's failures are the other checks' to report
        return None
    return _verdict(_phase_free(function), make_inputs)


def promoted_verdict(cls: type, make_inputs: Callable[[], tuple]) -> Optional[bool]:
    """gradcheck with each real-valued complex input (imaginary part zero) given as its real part
    and made complex inside, as a wrapper that promotes a real argument does: the gradient such a
    caller gets is the real part of backward's. Eigenvectors of `eig` are taken as |v|^2. None
    when no input is so, or anything raises: no verdict."""
    function = _phase_free(structure.project(differentiable_outputs(cls, make_inputs), structure.of(make_inputs)))
    try:
        promoted = [index for index, value in enumerate(make_inputs())
                    if isinstance(value, torch.Tensor) and value.is_complex() and not value.imag.any()]
    except Exception:  # noqa: BLE001 - no inputs, no verdict
        return None
    if not promoted:
        return None

    def real_inputs() -> tuple:
        return tuple(value.real.detach().requires_grad_(value.requires_grad) if index in promoted else value
                     for index, value in enumerate(make_inputs()))

    def on_real(*inputs: Any) -> Any:
        return function(*(value.to(_COMPLEX_OF.get(value.dtype, torch.complex128)) if index in promoted else value
                          for index, value in enumerate(inputs)))

    return _verdict(on_real, real_inputs)


_COMPLEX_OF = {torch.float32: torch.complex64, torch.float64: torch.complex128}


def _eigenvector_like(output: Any) -> bool:
    return (isinstance(output, torch.Tensor) and output.is_complex() and output.dim() >= 2
            and output.shape[-1] == output.shape[-2])


def _phase_free(function: Callable[..., Any]) -> Callable[..., tuple]:
    """``function`` with each complex square output (eigenvectors) taken as |v|^2."""
    def phase_free(*inputs: Any) -> tuple:
        return tuple(output.abs() ** 2 if _eigenvector_like(output) else output
                     for output in _as_tuple(function(*inputs)))

    return phase_free


def _verdict(function: Callable[..., Any], make_inputs: Callable[[], tuple]) -> Optional[bool]:
    """gradcheck's verdict on ``function`` at the tolerances its outputs call for; None when
    anything raises or finite differences cannot judge it."""
    try:
        inputs = make_inputs()
        with torch.no_grad():
            tolerances = _tolerances(inputs, _as_tuple(function(*inputs)))
        return None if tolerances is None else _gradcheck_at(function, make_inputs, tolerances)
    except Exception:  # noqa: BLE001 - a verdict only where the check runs through
        return None


def _passes_coarse(function: Callable[..., Any], make_inputs: Callable[[], tuple]) -> bool:
    try:
        return _gradcheck_at(function, make_inputs, COARSE)
    except Exception:  # noqa: BLE001 - a step this wide may leave forward's domain: no second look
        return False


def _judged_once_per_forward(cls: type, function: Callable[..., Any], make_inputs: Callable[[], tuple],
                             names: list[str], tolerances: Tolerances) -> GradcheckOutcome:
    """gradcheck's verdict for a backward that runs once per forward (``RUNS_ONCE``): backward's
    Jacobian from one fresh forward per row, against finite differences, at gradcheck's tolerances."""
    inputs = make_inputs()
    jacobians = jacobians_by_input(function, inputs, tolerances.eps, make_inputs)
    if not jacobians:
        return GradcheckOutcome(skip="backward runs once per forward, and no Jacobian could be built one forward "
                                     "a row either", tolerances=tolerances)
    if all(torch.allclose(analytical, numerical, rtol=tolerances.rtol, atol=tolerances.atol)
           for analytical, numerical in jacobians.values()):
        return GradcheckOutcome(tolerances=tolerances, note=ONCE_NOTE)
    outcome = _judged(cls, function, make_inputs, names, inputs, tolerances, jacobians)
    outcome.note = ONCE_NOTE
    if outcome.by_design is not None:
        outcome.by_design.message += f" ({ONCE_NOTE})"
    elif outcome.message:
        outcome.message += f" ({ONCE_NOTE})"
    return outcome


def _judged(cls: type, function: Callable[..., Any], make_inputs: Callable[[], tuple], names: list[str],
            inputs: tuple, tolerances: Tolerances, jacobians: dict[int, tuple[torch.Tensor, torch.Tensor]]
            ) -> GradcheckOutcome:
    """The verdict on backward's and forward's Jacobians after gradcheck failed: where and by how
    much, or by design (``by_design``)."""
    if not jacobians:
        return GradcheckOutcome("gradcheck failed (Jacobian mismatch)", tolerances=tolerances)
    for index, (analytical, numerical) in jacobians.items():
        bad = _first_nonfinite((numerical,))
        if bad is not None:
            _, (row, column), value = bad
            element = _unravel(column, inputs[index].shape)
            return GradcheckOutcome(skip=f"forward gives {value} within {tolerances.eps:g} of "
                                         f"{_input_name(index, names)} at element {element} (for output element "
                                         f"{row}): the input is at the edge of forward's domain",
                                    tolerances=tolerances)
    for index, (analytical, numerical) in jacobians.items():
        bad = _first_nonfinite((analytical,))
        if bad is not None:
            _, (row, column), value = bad
            element = _unravel(column, inputs[index].shape)
            return GradcheckOutcome(f"gradcheck failed: backward returns {value} in the gradient for "
                                    f"{_input_name(index, names)} at element {element} (for output element "
                                    f"{row}), where forward and its finite differences are finite",
                                    tolerances=tolerances)
    worst = {index: float((analytical - numerical).abs().max()) if numerical.numel() else 0.0
             for index, (analytical, numerical) in jacobians.items()}
    failing = {index: jacobians[index] for index, difference in worst.items()
               if difference > tolerances.atol}
    explained = by_design.explain_failure(cls, make_inputs, names, function, failing)
    if explained is not None:
        return GradcheckOutcome(by_design=explained, tolerances=tolerances)
    attribution = by_design.attribution_rule(cls, make_inputs, function) if failing else ""
    if attribution:
        return GradcheckOutcome(by_design=by_design.ByDesign(by_design.ATTRIBUTION, f"{attribution}. gradcheck fails "
                                                             "by design (the gradient is not forward's derivative); "
                                                             "backward's count, shapes, dtypes and finiteness were "
                                                             "checked"), tolerances=tolerances)
    relevance = _relevance_rule(cls, function, inputs, names, jacobians) if failing else ""
    if relevance:
        return GradcheckOutcome(by_design=by_design.ByDesign(by_design.RELEVANCE, f"{relevance}. gradcheck fails by "
                                                             "design (the gradient is not forward's derivative); "
                                                             "backward's count, shapes, dtypes and finiteness were "
                                                             "checked"), tolerances=tolerances)
    # Some inputs may fail by design and others not (pypose's SE3_AdjTXa: a tangent-space gradient
    # for X, a wrong one for a): name only the others, and say why the rest are left out.
    by_input = {index: by_design.explain_failure(cls, make_inputs, names, function, {index: jacobian})
                for index, jacobian in failing.items()} if len(failing) > 1 else {}
    aside = {index: why for index, why in by_input.items() if why is not None}
    parts = [f"{_input_name(index, names)}: max |analytical - numerical| = {difference:.4g}"
             for index, difference in sorted(worst.items(), key=lambda item: -item[1])
             if difference > tolerances.atol and index not in aside]
    note = "".join(f"; {_input_name(index, names)} differs by design ({why.kind})" for index, why in sorted(aside.items()))
    note += by_design.rounding_note(function, make_inputs(), names,
                                    {index: jacobian for index, jacobian in failing.items() if index not in aside})
    unread = tuple(index for index, (_, numerical) in sorted(failing.items())
                   if index not in aside and not bool((numerical != 0).any()))
    ignored = tuple(index for index, (analytical, numerical) in sorted(failing.items())
                    if index not in aside and index not in unread
                    and _fails_only_where_ignored(function, make_inputs, index, analytical, numerical, tolerances))
    return GradcheckOutcome("gradcheck failed for " + "; ".join(parts or ["an input (within tolerance per element)"])
                            + note, tolerances=tolerances, unread=unread, ignored=ignored)


def _fails_only_where_ignored(function: Callable[..., Any], make_inputs: Callable[[], tuple], index: int,
                              analytical: torch.Tensor, numerical: torch.Tensor, tolerances: Tolerances) -> bool:
    """Every element of input ``index`` where the Jacobians disagree is one that forward ignores:
    its finite differences are zero, and so is any change of it, however large (a zero padding
    that the callers add and backward presumes). A flat stretch (a ReLU's negative half) is not
    ignored: a large change moves it out, and forward's output changes."""
    if analytical.shape != numerical.shape or numerical.dim() != 2:
        return False
    wrong = ((analytical - numerical).abs() > tolerances.atol + tolerances.rtol * numerical.abs()).any(dim=0)
    if not bool(wrong.any()) or bool((wrong & (numerical != 0).any(dim=0)).any()):
        return False
    columns = wrong.nonzero().reshape(-1)
    inputs = list(make_inputs())
    try:
        with torch.no_grad():
            before = _as_tuple(function(*inputs))
            for scale in (10.0, -10.0):
                changed = inputs[index].detach().clone()
                flat = changed.reshape(-1)
                flat[columns] = flat[columns] + scale * (1 + torch.rand(len(columns), dtype=flat.real.dtype))
                after = _as_tuple(function(*inputs[:index], changed.reshape(inputs[index].shape), *inputs[index + 1:]))
                if len(after) != len(before) or any(
                        not torch.equal(a, b) for a, b in zip(before, after) if isinstance(a, torch.Tensor)):
                    return False
    except Exception:  # noqa: BLE001 - user code: a change it refuses says nothing
        return False
    return True


def gradcheck_failure(cls: type, make_inputs: Callable[[], tuple], names: list[str]) -> Optional[str]:
    """AGL901's message, or None (a by-design failure or an unjudgeable input is not one)."""
    return gradcheck_outcome(cls, make_inputs, names).message or None


def _tolerances(inputs: tuple, outputs: tuple) -> Optional[Tolerances]:
    """PRECISE, or FLOAT32 when forward turns float64 inputs into float32 (or complex64: two float32s)
    outputs; None for half."""
    if not any(isinstance(value, torch.Tensor) and value.dtype == torch.float64 for value in inputs):
        return PRECISE
    dtypes = {output.dtype for output in outputs if isinstance(output, torch.Tensor)
              and (output.is_floating_point() or output.is_complex())}
    if dtypes & {torch.float16, torch.bfloat16, torch.complex32}:
        return None
    return FLOAT32 if dtypes & {torch.float32, torch.complex64} else PRECISE


def _first_nonfinite(tensors: tuple) -> Optional[tuple[int, Any, str]]:
    """(tensor number, element index, "nan"/"inf"/"-inf") of the first non-finite element."""
    for number, tensor in enumerate(tensors):
        if not isinstance(tensor, torch.Tensor) or not (tensor.is_floating_point() or tensor.is_complex()):
            continue
        finite = torch.isfinite(tensor.detach())
        if bool(finite.all()):
            continue
        flat = int((~finite).reshape(-1).nonzero()[0])
        value = float(tensor.detach().reshape(-1)[flat].real) if tensor.is_complex() else \
            float(tensor.detach().reshape(-1)[flat])
        return number, _unravel(flat, tensor.shape), str(value)
    return None


def _unravel(flat: int, shape: torch.Size) -> Any:
    index = []
    for size in reversed(tuple(shape)):
        index.append(flat % size)
        flat //= size
    index = tuple(reversed(index))
    return index[0] if len(index) == 1 else index


def _as_tuple(outputs: Any) -> tuple:
    return outputs if isinstance(outputs, tuple) else (outputs,)


def over_tensors(function: Callable[..., Any], inputs: tuple) -> tuple[Callable[..., Any], tuple]:
    """``function`` and ``inputs`` for gradcheck with the non-tensor arguments closed over: torch's
    gradcheck rebuilds a NamedTuple argument from a ``map`` (``type(x)(map(...))``), so forward
    then gets a parameter object whose first field is a map (norse's ``LIFParameters``)."""
    positions = [index for index, value in enumerate(inputs) if isinstance(value, torch.Tensor)]
    if len(positions) == len(inputs):
        return function, inputs

    def call(*tensors: Any) -> Any:
        arguments = list(inputs)
        for position, tensor in zip(positions, tensors):
            arguments[position] = tensor
        return function(*arguments)

    return call, tuple(inputs[position] for position in positions)


def gradgradcheck_failure(cls: type, make_inputs: Callable[[], tuple],
                          names: Optional[list[str]] = None) -> Optional[str]:
    structures = structure.of(make_inputs)
    function = structure.project(differentiable_outputs(cls, make_inputs), structures)
    note = structure.note(structures, names or [])
    inputs = make_inputs()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.autograd.gradgradcheck(*over_tensors(function, inputs), eps=EPS, atol=ATOL,
                                         rtol=RTOL, fast_mode=False, raise_exception=True)
    except GradcheckError as error:
        first = _named_gradgradcheck_input(_first_line(error).rstrip(","), inputs, names or [])
        return f"gradgradcheck failed: {first}{_nonfinite_note(str(error))}{note}"
    except Exception as error:
        only = device_only(error)
        if only:
            raise DeviceOnly(f"the second derivative's code {only}, and this run is on the CPU") from error
        return f"gradgradcheck raised {type(error).__name__}: {_first_line(error)}{note}"
    return None


class DeviceOnly(Exception):
    """A check that stopped where the code says it runs on CUDA only: nothing it could tell here."""


# What torch raises where code needs CUDA, and an assert of the user's that demands it.
# (Not "Expected all tensors to be on the same device": a device hard-coded in the code is its bug.)
_NO_CUDA = re.compile(r"Torch not compiled with CUDA|Found no NVIDIA driver|no CUDA GPUs are available|"
                      r"CUDA driver", re.IGNORECASE)
_ASSERTS_CUDA = re.compile(r"\.is_cuda\b|\.device\.type\s*==\s*['\"]cuda['\"]|device\s*==\s*['\"]cuda")


def device_only(error: BaseException) -> str:
    """How ``error`` shows code that runs on CUDA only ("asserts CUDA tensors (`assert x.is_cuda`)"),
    or "": torch's own "not compiled with CUDA" errors, or an ``assert`` whose test reads
    ``.is_cuda`` (a kernel's backward written for the GPU alone)."""
    if _NO_CUDA.search(str(error)):
        return f"needs CUDA ({type(error).__name__}: {_first_line(error)})"
    if not isinstance(error, AssertionError) or error.__traceback__ is None:
        return ""
    last = error.__traceback__
    while last.tb_next is not None:
        last = last.tb_next
    test = _assert_test(last.tb_frame.f_code.co_filename, last.tb_lineno)
    return f"asserts CUDA tensors (`assert {test}`)" if test and _ASSERTS_CUDA.search(test) else ""


def _assert_test(path: str, line: int) -> str:
    """The source of the test of the ``assert`` statement at ``line`` of ``path``, on one line."""
    import ast
    import linecache

    source = "".join(linecache.getlines(path))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.lineno <= line <= (node.end_lineno or node.lineno):
            return " ".join((ast.get_source_segment(source, node.test) or "").split())
    return ""


def _named_gradgradcheck_input(line: str, inputs: tuple, names: list[str]) -> str:
    """gradgradcheck numbers only the tensors that require grad (forward's, then the output
    gradients it adds): "input 0" is forward's input 2 when inputs 0 and 1 are passed without
    grad. Say which of forward's inputs it is."""
    match = re.search(r"with respect to input (\d+)", line)
    wanting = [index for index, value in enumerate(inputs) if isinstance(value, torch.Tensor) and value.requires_grad]
    if match is None:
        return line
    number = int(match.group(1))
    what = _input_name(wanting[number], names) if number < len(wanting) else \
        f"the gradient of output {number - len(wanting)}"
    return line[:match.start()] + f"with respect to {what}" + line[match.end():]


def _nonfinite_note(text: str) -> str:
    """gradcheck's error prints the numerical, then the analytical Jacobian: say which has NaN/inf."""
    numerical, _, analytical = text.partition("analytical")
    where = [name for name, part in (("analytical (backward's)", analytical), ("numerical", numerical))
             if re.search(r"\b(?:nan|inf)\b", part)]
    return f" (the {' and the '.join(where)} Jacobian has NaN or inf)" if where else ""


def jacobian_differences(function: Callable[..., Any], inputs: tuple, eps: float = EPS) -> dict[int, float]:
    """Input index -> max |analytical - numerical| over its Jacobian (real float tensors only)."""
    return {index: float((analytical - numerical).abs().max()) if numerical.numel() else 0.0
            for index, (analytical, numerical) in jacobians_by_input(function, inputs, eps).items()}


def jacobians_by_input(function: Callable[..., Any], inputs: tuple, eps: float = EPS,
                       fresh_inputs: Optional[Callable[[], tuple]] = None
                       ) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Input index -> (analytical, numerical) Jacobian, (outputs, input elements), real float inputs only.
    With ``fresh_inputs``, each row of the analytical one comes from its own forward on new inputs
    (a backward that runs once per forward: ``RUNS_ONCE``)."""
    jacobians: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    for index, value in enumerate(inputs):
        if not (isinstance(value, torch.Tensor) and value.requires_grad and value.is_floating_point()):
            continue
        try:
            numerical = _numerical_jacobian(function, inputs, index, eps)
            analytical = _analytical_jacobian(function, inputs, index) if fresh_inputs is None else \
                _analytical_jacobian_once_per_forward(function, fresh_inputs, index)
        except Exception:
            continue
        if numerical.shape == analytical.shape:
            jacobians[index] = (analytical.to(torch.float64), numerical.to(torch.float64))
    return jacobians


def _flat_outputs(function: Callable[..., Any], inputs: tuple) -> torch.Tensor:
    outputs = function(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return torch.cat([output.detach().reshape(-1) for output in outputs]) if outputs else torch.zeros(0)


def _numerical_jacobian(function: Callable[..., Any], inputs: tuple, index: int, eps: float = EPS) -> torch.Tensor:
    columns = []
    with torch.no_grad():
        base = inputs[index].detach()
        for element in range(base.numel()):
            shifted = []
            for sign in (1, -1):
                perturbed = base.clone()
                perturbed.view(-1)[element] += sign * eps
                arguments = list(inputs)
                arguments[index] = perturbed.requires_grad_(True)
                shifted.append(_flat_outputs(function, tuple(arguments)))
            columns.append((shifted[0] - shifted[1]) / (2 * eps))
    return torch.stack(columns, dim=1)  # (outputs, input elements)


def _analytical_jacobian(function: Callable[..., Any], inputs: tuple, index: int) -> torch.Tensor:
    with torch.enable_grad():
        outputs = function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        rows = []
        for output_number, output in enumerate(outputs):
            for element in range(output.numel()):
                # contiguous: zeros_like keeps a transposed output's strides, and view(-1) refuses those
                grad_outputs = [torch.zeros_like(o, memory_format=torch.contiguous_format) for o in outputs]
                grad_outputs[output_number].view(-1)[element] = 1.0
                grad, = torch.autograd.grad(outputs, inputs[index], grad_outputs, retain_graph=True,
                                            allow_unused=True)
                rows.append(torch.zeros(inputs[index].numel(), dtype=inputs[index].dtype,
                                        device=inputs[index].device) if grad is None
                            else grad.detach().reshape(-1))
    return torch.stack(rows, dim=0)


def _analytical_jacobian_once_per_forward(function: Callable[..., Any], fresh_inputs: Callable[[], tuple],
                                          index: int) -> torch.Tensor:
    """``_analytical_jacobian`` with one forward, on fresh inputs, for each row."""
    with torch.no_grad():
        sizes = [output.numel() for output in _as_tuple(function(*fresh_inputs()))]
    rows = []
    for output_number, size in enumerate(sizes):
        for element in range(size):
            inputs = fresh_inputs()
            with torch.enable_grad():
                outputs = _as_tuple(function(*inputs))
                grad_outputs = [torch.zeros_like(o, memory_format=torch.contiguous_format) for o in outputs]
                grad_outputs[output_number].view(-1)[element] = 1.0
                grad, = torch.autograd.grad(outputs, inputs[index], grad_outputs, allow_unused=True)
            rows.append(torch.zeros(inputs[index].numel(), dtype=inputs[index].dtype, device=inputs[index].device)
                        if grad is None else grad.detach().reshape(-1))
    return torch.stack(rows, dim=0)


def _input_name(index: int, names: list[str]) -> str:
    return f"input {index} (`{names[index]}`)" if index < len(names) else f"input {index}"


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).replace("torch.", "")


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:300] if lines else type(error).__name__
