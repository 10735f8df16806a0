"""How far a runtime finding on guessed inputs can be trusted, for ``--dynamic``'s child.

The input search (``inputs``) often guesses: shapes, numbers, constants, a stand-in for a function.
A gradient that fails gradcheck on a guess may be the guess's doing, and an unknown never makes an
error. Before a finding is reported, these second looks decide what it is worth:

- a constant guessed as a tensor makes it a warning (``uncertain``);
- on synthesized inputs (``uncertain_on_guesses``): iterations stopped early by guessed settings
  are run again settled (a pass says nothing); a stand-in callable makes an AGL901 a warning, and
  an unchanged output on the identity says nothing; then each kind of doubt in turn (complex
  gradients for real guesses, numbers guessed from names, ``*args`` counts, shapes for a smaller
  input, symmetric matrices, unread or ignored inputs, what the package itself passes, the
  guessed numbers at 1.0) makes an error a warning that names it.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import replace
from typing import Any, Callable, Optional


# A wrong gradient compared with finite differences: on inputs whose constants were guessed, the
# comparison may judge the guess (a filter bank of the wrong shape) rather than the formula.
_JUDGED_BY_GRADIENTS = frozenset({"AGL901", "AGL902"})


def uncertain(finding: Any, guessed_constants: tuple[str, ...]) -> Any:
    """A warning, not an error, when the inputs hold guessed constants (``Candidate.guessed_constants``):
    an unknown never makes an error. ``@example`` inputs make it certain again."""
    if not guessed_constants or finding.code not in _JUDGED_BY_GRADIENTS:
        return finding
    names = ", ".join(f"`{name}`" for name in guessed_constants)
    were = "were guessed as tensors" if len(guessed_constants) > 1 else "was guessed as a tensor"
    return replace(finding, level="warning",
                   message=f"{finding.message} (not certain: {names} {were} that backward gives no gradient, "
                           "whose shape may not be what the class expects; declare an @example to check it on "
                           "real inputs)")


def _input_names(indices: tuple[int, ...], names: list[str]) -> str:
    return ", ".join(f"`{names[index]}`" if index < len(names) else f"input {index}" for index in indices)


def _variadic(cls: type) -> str:
    """The name of forward's ``*args`` parameter, or ``""``."""
    from autograd_lint.dynamic.synthesis import forward_parameters

    return next((parameter.name for parameter in forward_parameters(cls) or ()
                 if parameter.kind == inspect.Parameter.VAR_POSITIONAL), "")


def uncertain_on_guesses(cls: type, inputs: Any, names: list[str], found: list, entry: dict,
                          package_inputs: Callable[[], Optional[Any]] = lambda: None) -> list:
    """On synthesized inputs, the errors that a guess, not backward, may have caused become
    warnings: an unknown never makes an error.

    - AGL901 when the guessed numbers (``tau=0.5``, ``damping=0.5``) all set to 1.0 make
      gradcheck pass: backward scales by a hyper-parameter (a damping factor, a surrogate's
      slope) whose real value the run does not know.
    - AGL901 when an input that gradcheck fails for is one forward does not read, yet backward
      gives a gradient (``checks.GradcheckOutcome.unread``): a coupling the guess lacks (``factor``
      must be the factorization of ``a``), or a surrogate's gradient for a parameter.
    - AGL901 when gradcheck disagrees only on elements of an input that forward ignores entirely
      (a padding the callers zero), see ``checks._fails_only_where_ignored``.
    - AGL901 when gradcheck passes once the guessed square matrices are symmetric: backward
      derived for a covariance (a matrix square root by Newton-Schulz iterations).
    - AGL903 when the only problem is a complex gradient for an input guessed real.
    - AGL901, AGL902 on inputs made complex because backward returned complex gradients for the
      real ones (``inputs.MADE_COMPLEX``): the class may be meant for real inputs only. An AGL901
      that gradcheck confirms on real values promoted to complex inside (the gradient a wrapper
      that promotes its argument gets) stays an error.
    - AGL903 when the only problem is the number of gradients and forward takes ``*args``: how
      many to pass there was guessed (a reversible block's ``*params`` are its modules').
    - AGL903 when every problem is a gradient shaped for a smaller input that broadcasts to the
      guessed one (a time constant guessed (3, 4) for which the class returns a 0-d gradient, as
      for the 0-d parameter it is always given). Axes swapped, or any other shape, stay errors."""
    if inputs.source != "synthesized":
        return found
    from autograd_lint.dynamic.inputs import MADE_COMPLEX

    if any(finding.code in _GRADCHECK_FAILED for finding in found) and _passes_when_converged(cls, inputs, names, entry):
        # An iterative forward stopped early by the guessed settings (two iterations): its implicit
        # gradient fails gradcheck, or its output steps like a straight-through estimator's; once
        # the iterations settle, gradcheck passes, so neither says anything.
        found = [finding for finding in found if finding.code not in _GRADCHECK_FAILED]
        entry["skipped"] = [*(skipped for skipped in entry.get("skipped", []) if not skipped.startswith("gradgradcheck")),
                            "gradgradcheck: the first derivative is right only once the iterations settle"]
    stand_ins = _stand_ins_passed(inputs, names)
    if stand_ins:
        judged = [_judged_on_stand_ins(finding, stand_ins) for finding in found]
        if any(finding is None for finding in judged):
            entry["skipped"] = [skipped for skipped in entry.get("skipped", []) if "(AGL908)" not in skipped]
            entry["skipped"].append(f"gradcheck's verdict: forward returned its input unchanged with a stand-in "
                                    f"callable for {stand_ins}, which says nothing of the class's own function")
        found = [finding for finding in judged if finding is not None]
    result = []
    for finding in found:
        if finding.level in ("warning", "info"):
            result.append(finding)
        elif finding.code == "AGL903" and "a complex gradient for a real input" in finding.message \
                and all(kind == "dtype" for kind in finding.kinds):
            result.append(_not_certain(finding, "the input was guessed real, and backward computes in complex "
                                                "numbers: the class may be meant for a complex input"))
        elif finding.code in _JUDGED_BY_GRADIENTS and MADE_COMPLEX in inputs.detail:
            promoted = _promoted_reals_verdict(cls, inputs, entry) if finding.code == "AGL901" else None
            if promoted is False:
                result.append(replace(finding, message=(
                    f"{finding.message}; it fails as well on the real values made complex inside forward's call, "
                    "which is the gradient a wrapper that promotes a real argument gets: that gradient is wrong")))
                continue
            passes = ("; on real values made complex inside forward's call, as a wrapper that promotes a real "
                      "argument passes them, gradcheck passes") if promoted else ""
            result.append(_not_certain(finding, "backward returned complex gradients for the guessed real inputs, "
                                                "so they were made complex for gradcheck, and the class may be "
                                                f"meant for real inputs only{passes}"))
        elif finding.code == "AGL903" and _gradients_for_guessed_numbers_only(cls, inputs, names, finding):
            result.append(_not_certain(finding, "the run guessed a number there from the parameter's name, and "
                                                "backward gives it a gradient, so the class may take a tensor there"))
        elif finding.code == "AGL903" and finding.kinds == ("count",) and _variadic(cls):
            result.append(_not_certain(finding, f"forward takes `*{_variadic(cls)}`, and how many arguments to "
                                                "pass there was guessed; backward's count may follow what the "
                                                "callers pass, a module's parameters say"))
        elif finding.code == "AGL903" and finding.smaller_inputs_only:
            result.append(_not_certain(finding, "the inputs' shapes were guessed, and the class may be meant for "
                                                "that smaller shape"))
        elif finding.code == "AGL901" and finding.symmetric_passes:
            square = _input_names(finding.symmetric_passes, names)
            result.append(_not_certain(finding, f"gradcheck passes once the guessed square matrix {square} is "
                                                "symmetric, so backward may be derived for symmetric inputs (a "
                                                "covariance, a Gram matrix), as the class's callers may always pass"))
        elif finding.code == "AGL901" and finding.ignored_elements:
            ignored = _input_names(finding.ignored_elements, names)
            result.append(_not_certain(finding, f"gradcheck disagrees only on elements of {ignored} that forward "
                                                "ignores, changing them changes nothing, yet backward gives them a "
                                                "gradient: the class may presume them fixed (a zero padding its "
                                                "callers add)"))
        elif finding.code == "AGL901" and finding.unread_inputs:
            unread = _input_names(finding.unread_inputs, names)
            result.append(_not_certain(finding, f"forward does not read {unread}, yet backward gives it a gradient: "
                                                "the class may presume a coupling with another input that the "
                                                "guessed inputs lack (a factorization of a matrix beside it) or "
                                                "pass a surrogate's gradient on purpose"))
        elif finding.code == "AGL901" and (passed_on := _passes_on_the_package_s_inputs(cls, inputs, names, entry,
                                                                                          package_inputs)):
            result.append(_not_certain(finding, f"on what the package itself passes ({passed_on}) gradcheck does "
                                                "not fail, so the guessed inputs may be ones the class is never "
                                                "given, such as an input without the padding its callers add"))
        elif finding.code == "AGL901" and _passes_with_unit_numbers(cls, inputs, names, entry):
            guessed = _guessed_numbers(cls, inputs.make_inputs(), names)
            numbers = ", ".join(f"`{name}`" for index, name in enumerate(names) if index in guessed)
            result.append(_not_certain(finding, f"with the guessed numbers {numbers} all 1.0 gradcheck passes, so "
                                                "the failure may be the guess's: a hyper-parameter that backward "
                                                "scales by, or a regularization too small for forward's iterations "
                                                "to settle, whose real value this run does not know"))
        else:
            result.append(finding)
    return result


def _not_certain(finding: Any, reason: str) -> Any:
    """``finding`` as a warning whose message says why it is not certain, and how to make it so."""
    return replace(finding, level="warning",
                   message=f"{finding.message} (not certain: {reason}; declare an @example to check it on real inputs)")


def _promoted_reals_verdict(cls: type, inputs: Any, entry: dict) -> Optional[bool]:
    """gradcheck's verdict with the inputs made complex given real and promoted inside
    (``checks.promoted_verdict``); None when it cannot tell."""
    from autograd_lint.dynamic import checks

    try:
        verdict = checks.promoted_verdict(cls, inputs.make_inputs)
    except BaseException:  # noqa: B036 - the user's code under check can raise anything
        return None
    if verdict is not None:
        entry["ran"].append("gradcheck on real values made complex inside")
    return verdict


def _gradients_for_guessed_numbers_only(cls: type, inputs: Any, names: list[str], finding: Any) -> bool:
    """Whether AGL903's only problems are gradients for inputs that the run guessed as numbers
    (``_guessed_numbers``): a tensor may belong there (a cost matrix named ``c``)."""
    if not finding.non_tensor_inputs:
        return False
    try:
        guessed = _guessed_numbers(cls, inputs.make_inputs(), names)
    except Exception:  # noqa: BLE001 - inputs that no longer build: no doubt to add
        return False
    return set(finding.non_tensor_inputs) <= guessed


def _guessed_numbers(cls: type, values: tuple, names: list[str]) -> set[int]:
    """The positions of the float arguments that are not 1.0 and not forward's own default for
    that parameter (a tolerance or a step forward declares is the author's value, not a guess)."""
    from autograd_lint.dynamic.synthesis import forward_parameters

    defaults = {parameter.name: parameter.default for parameter in forward_parameters(cls) or ()
                if parameter.default is not inspect.Parameter.empty}
    return {index for index, value in enumerate(values)
            if isinstance(value, float) and value != 1.0
            and not (index < len(names) and names[index] in defaults and defaults[names[index]] == value)}


# Parameters that set how long an iterative forward runs (a bisection's `n` where forward loops
# `range(n)`, a solver's `max_iter`) and when it stops (`tol`).
_ITERATION_COUNT = re.compile(r"^(?:n_?iters?|max_?iters?|maxiter|num_?iters?|iters?|iterations|n_iterations|"
                              r"max_iterations|num_iterations|n_?steps|max_?steps|num_?steps)$")
_TOLERANCE = re.compile(r"^(?:tol|tolerance|atol|rtol|abs_?tol|rel_?tol|threshold_tol)$")
CONVERGED_COUNT, CONVERGED_TOLERANCE = 60, 1e-12
# gradcheck failed: an AGL901, or an AGL908 (a by-design kind read from the failure). A second
# look that ends in either has not passed.
_GRADCHECK_FAILED = ("AGL901", "AGL908")


def _iteration_settings(cls: type, values: tuple, names: list[str]) -> dict[int, Any]:
    """The positions of the guessed iteration counts and tolerances, and the value that lets
    forward's iterations settle; a number that forward declares as its default, or that is not a
    guess, is left alone. A bare ``n`` counts where forward loops ``range(n)``."""
    from autograd_lint.dynamic.synthesis import forward_function, forward_parameters

    defaults = {parameter.name: parameter.default for parameter in forward_parameters(cls) or ()
                if parameter.default is not inspect.Parameter.empty}
    function = forward_function(cls)
    looped = {_range_stop(node) for node in (ast.walk(function) if function is not None else ())
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"}
    settings: dict[int, Any] = {}
    for index, value in enumerate(values):
        name = names[index] if index < len(names) else ""
        if name in defaults and defaults[name] == value:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and (_ITERATION_COUNT.match(name) or name in looped):
            settings[index] = CONVERGED_COUNT
        elif isinstance(value, float) and _TOLERANCE.match(name):
            settings[index] = CONVERGED_TOLERANCE
    return settings


def _passes_on_the_package_s_inputs(cls: type, inputs: Any, names: list[str], entry: dict,
                                    package_inputs: Callable[[], Optional[Any]]) -> Optional[str]:
    """gradcheck on what the package's own examples or callers pass to ``apply`` (``package_inputs``),
    where the inputs were guessed from the signature alone: where it passes there, or fails only by
    design (AGL908: the package's estimator), those inputs' label (``expm()``, ``the docstring
    example of X``) and the kind, else None."""
    from autograd_lint.dynamic import checks
    from autograd_lint.dynamic.inputs import forward_problem, make_inputs_factory

    if inputs.detail.startswith("through ") or "docstring example" in inputs.detail:
        return None  # the package's own inputs already
    try:
        candidate = package_inputs()
        if candidate is None:
            return None
        make = make_inputs_factory(candidate.recipe, "cpu")
        if forward_problem(cls, make) is not None:
            return None
        again = checks.run_checks(cls, make, names, "")
    except BaseException:  # noqa: B036 - the user's code under check can raise anything
        return None
    label = candidate.detail.split(",")[0].removeprefix("through ")
    entry["ran"].append(f"gradcheck on what the package passes ({label})")
    # There, a by-design kind (AGL908) is the package's own estimator at work, not a failure.
    by_design = [f for f in again.findings if f.code == "AGL908"]
    passed = "gradcheck" in again.ran and not any(f.code == "AGL901" for f in again.findings)
    return (f"{label}, where the gradient is by design: {by_design[0].message.split(':')[0]}" if by_design else label) \
        if passed else None


def _stand_ins_passed(inputs: Any, names: list[str]) -> str:
    """The stand-in callables among the inputs, as ``func=identity`` (empty where there is none)."""
    from autograd_lint.dynamic.synthesis import is_stand_in

    try:
        values = inputs.make_inputs()
    except BaseException:  # noqa: B036 - the inputs were built once already; a second build may still fail
        return ""
    return ", ".join(f"`{names[index] if index < len(names) else index}`={value!r}"
                     for index, value in enumerate(values) if is_stand_in(value))


def _judged_on_stand_ins(finding: Any, stand_ins: str) -> Optional[Any]:
    """A gradient finding on inputs with a stand-in callable: the class's own function (a circuit,
    an operator) may be what backward's formula assumes, so an AGL901 is a warning. A "gradient
    modifier" read from a forward that returned its input is the identity's doing: neither a
    label (AGL908) nor a finding can be read from it (None), whether the class is a
    straight-through estimator over the function it is given or a formula for that function."""
    from autograd_lint.dynamic.by_design import MODIFIER

    if finding.code == "AGL901" and finding.level not in ("warning", "info"):
        return replace(finding, level="warning", message=(
            f"{finding.message} (not certain: a stand-in callable was passed for {stand_ins}, and backward may "
            "assume the package's own function; declare an @example to check it on real inputs)"))
    if finding.code == "AGL908" and MODIFIER in finding.message:
        return None
    return finding


def _range_stop(call: ast.Call) -> Optional[str]:
    """The name of a ``range(...)`` call's stop, where it is one: ``range(n)``, ``range(1, n)``."""
    stop = call.args[0] if len(call.args) == 1 else call.args[1] if len(call.args) > 1 else None
    return stop.id if isinstance(stop, ast.Name) else None


def _passes_when_converged(cls: type, inputs: Any, names: list[str], entry: dict) -> bool:
    """gradcheck, again, with the guessed iteration counts at 60 and tolerances at 1e-12
    (``_iteration_settings``): an implicit or adjoint backward is exact only where forward's
    iterations have settled, and two iterations of a guess do not. False when there are no such
    settings, or when anything raises."""
    from autograd_lint.dynamic import checks

    settings = _iteration_settings(cls, inputs.make_inputs(), names)
    if not settings:
        return False

    def converged_inputs() -> tuple:
        return tuple(settings.get(index, value) for index, value in enumerate(inputs.make_inputs()))

    converged_inputs.structures = getattr(inputs.make_inputs, "structures", ())  # type: ignore[attr-defined]
    try:
        again = checks.run_checks(cls, converged_inputs, names, inputs.backward_error)
    except BaseException:  # noqa: B036 - the user's code under check can raise anything
        return False
    shown = ", ".join(f"{names[index]}={value}" for index, value in settings.items() if index < len(names))
    entry["ran"].append(f"gradcheck with the iterations left to settle ({shown})")
    return "gradcheck" in again.ran and not any(f.code in _GRADCHECK_FAILED for f in again.findings)


def _passes_with_unit_numbers(cls: type, inputs: Any, names: list[str], entry: dict) -> bool:
    """gradcheck, again, with every guessed float argument (``_guessed_numbers``) set to 1.0
    (nothing else changed); False when there is none, or when anything raises."""
    from autograd_lint.dynamic import checks

    guessed = _guessed_numbers(cls, inputs.make_inputs(), names)
    if not guessed:
        return False

    def unit_inputs() -> tuple:
        return tuple(1.0 if index in guessed else value for index, value in enumerate(inputs.make_inputs()))

    # the same structured set (dynamic/structure.py), so the check is judged as the first was
    unit_inputs.structures = getattr(inputs.make_inputs, "structures", ())  # type: ignore[attr-defined]

    try:
        again = checks.run_checks(cls, unit_inputs, names, inputs.backward_error)
    except BaseException:  # noqa: B036 - the user's code under check can raise anything
        return False
    entry["ran"].append("gradcheck with the guessed numbers at 1.0")
    return "gradcheck" in again.ran and not any(f.code in _GRADCHECK_FAILED for f in again.findings)
