"""``--dynamic``: an error that a guessed input may have caused is a warning that says so, and the
same wrong backward on declared inputs, or wrong whatever the guess, stays an error
(fixtures/dynamic/guessed_values.py; the real CLI, one child, wide time limits)."""

from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT, WIDE_DYNAMIC_TIMEOUT, assert_no_traceback, run_cli

pytest.importorskip("torch")

MODULE = "fixtures/dynamic/guessed_values.py"


@pytest.fixture(scope="module")
def findings():
    result = run_cli("--dynamic", "--dynamic-timeout", WIDE_DYNAMIC_TIMEOUT, "--format", "json", "--no-cache",
                     "--select", "AGL9", MODULE, cwd=REPO_ROOT, timeout=900)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr
    return {(f["function_class"], f["code"]): f for f in json.loads(result.stdout)["findings"]}


def test_a_gradient_scaled_by_a_guessed_number_is_a_warning(findings):
    damped = findings[("DampedSurrogate", "AGL901")]
    assert damped["severity"] == "warning"
    assert "with the guessed numbers `leak`, `damping` all 1.0 gradcheck passes" in damped["message"]
    assert findings[("DampedButWrong", "AGL901")]["severity"] == "error"


def test_a_gradient_shaped_for_another_guess_is_a_warning(findings):
    guessed = findings[("MembraneDecay", "AGL903")]
    assert guessed["severity"] == "warning"
    assert "the inputs' shapes were guessed, and the class may be meant for that smaller shape" in guessed["message"]
    declared = findings[("MembraneDecayDeclared", "AGL903")]
    assert declared["severity"] == "error" and "guessed" not in declared["message"]


def test_a_gradient_for_an_input_forward_does_not_read_is_a_warning_on_guesses(findings):
    # SolveWithFactor solves with `decomposed` and gives `a` the gradient: the caller's coupling
    # (decomposed computed from a) is unknown to the guess. Its near miss reads every input.
    coupled = findings[("SolveWithFactor", "AGL901")]
    assert coupled["severity"] == "warning"
    assert "(not certain: forward does not read `a`, yet backward gives it a gradient" in coupled["message"]
    assert findings[("SolveForgetsSign", "AGL901")]["severity"] == "error"


def test_a_number_by_default_is_not_guessed_as_a_tensor_for_a_union_annotation(findings):
    # `eps: Tensor | float = 1e-6`: the default is used; a tensor requiring grad was a false AGL901.
    assert not [key for key in findings if key[0] == "Regularized"]


def test_a_gradient_for_a_number_guessed_from_its_name_is_a_warning():
    """The checks themselves on `ShiftedByCost` with `c` a guessed number (as a structured guess
    makes it when a marginal beside it asks for one): backward's gradient for `c` is an AGL903
    that the guess may have caused, a warning; for `RepeatedCount`'s int `n`, an error."""
    import importlib.util

    import torch

    from autograd_lint.dynamic.checks import run_checks
    from autograd_lint.dynamic.inputs import ChosenInputs
    from autograd_lint.dynamic.judging import uncertain_on_guesses

    spec = importlib.util.spec_from_file_location("guessed_values", REPO_ROOT / MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def judged(cls, make, names):
        chosen = ChosenInputs("synthesized", "a guess", make, "", make)
        found = run_checks(cls, make, names).findings
        return {f.code: f for f in uncertain_on_guesses(cls, chosen, names, found, {"ran": []})}

    def marginals():
        return (0.5, torch.rand(4, dtype=torch.float64, requires_grad=True),
                torch.rand(4, dtype=torch.float64, requires_grad=True))

    shifted = judged(module.ShiftedByCost, marginals, ["c", "a", "b"])["AGL903"]
    assert shifted.level == "warning", shifted
    assert "gradient 0 is not None but input 0 (`c`) is not a tensor" in shifted.message
    assert "the run guessed a number there from the parameter's name" in shifted.message

    def count():
        return torch.rand(3, 4, dtype=torch.float64, requires_grad=True), 2

    assert judged(module.RepeatedCount, count, ["x", "n"])["AGL903"].level == ""
