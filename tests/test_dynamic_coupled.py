"""``--dynamic``: inputs that forward's code and errors fix (issue 29, item 5): ranks read off
``N, C, H, W = x.shape`` and ``x[:, :, None, :]``, a name's number that forward indexes, an int32
retry, a boolean flag set everywhere, a zero flag read with ``.item()`` in backward, a sampling grid's last size, a filter's taps;
and the reasons for what no guess can be (a callable operator, a nested ``apply`` with an argument
missing): fixtures/dynamic/coupled_retries.py.

The real CLI, one child, wide time limits (the test holds on two busy cores).
"""

from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT, WIDE_DYNAMIC_TIMEOUT, assert_no_traceback, run_cli

pytest.importorskip("torch")

MODULE = "fixtures/dynamic/coupled_retries.py"
# Class -> words its inputs' detail must hold (each checked: gradcheck ran).
CHECKED = {
    "HalvePooled": "x (2, 3, 2, 4)",  # rank 4 from the unpacking, even H and W
    "HalvePooledForgotQuarter": "x (2, 3, 2, 4)",
    "TrainingOnlyEstimate": "training=True",  # guessed False; backward's error names it
    "FilterRows": "taps (1, 1, 4)",  # a guessed constant of three dimensions, as a filter's taps
    "SpanBetween": "low (3, 2, 4)",  # not low=-0.5: forward indexes three of its dimensions
    "MaskedByLength": "lengths=[2, 1, 0] int32",  # segment lengths over x's rows, in the dtype asked
    "KeepConverged": "converged mask, all True",  # "where expected condition to be a boolean tensor"
    "StopIfSingular": "singular (1,) without grad = 0",
    "SampleAt": "input (2, 3, 5, 6), grid (2, 4, 3, 2)",
    "SplatOnto": "input (2, 3, 4, 3), grid (2, 4, 3, 2), shape=(5, 6)",
}


@pytest.fixture(scope="module")
def coupled_run(tmp_path_factory):
    report_path = tmp_path_factory.mktemp("coupled") / "report.json"
    result = run_cli("--dynamic", "--dynamic-timeout", WIDE_DYNAMIC_TIMEOUT, "--format", "json", "--no-cache",
                     "--dynamic-report", str(report_path), MODULE, cwd=REPO_ROOT, timeout=900)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr  # the near miss is an error
    findings = json.loads(result.stdout)["findings"]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return result, findings, {entry["function_class"]: entry for entry in report["functions"]}


def test_inputs_follow_what_forward_reads_and_what_its_errors_ask(coupled_run):
    _, _, entries = coupled_run
    for name, words in CHECKED.items():
        entry = entries[name]
        assert entry["status"] == "checked" and "gradcheck" in entry["ran"], entry
        assert words in entry["inputs"]["detail"], entry["inputs"]


def test_only_the_near_miss_fails_gradcheck(coupled_run):
    _, findings, _ = coupled_run
    wrong = {(f["function_class"], f["code"], f["severity"]) for f in findings if f["code"] in ("AGL901", "AGL902")}
    assert wrong == {("HalvePooledForgotQuarter", "AGL901", "error")}


def test_what_no_guess_can_be_is_named_in_the_reason(coupled_run):
    result, findings, entries = coupled_run
    operators = entries["AdjointApplied"]  # both called: the stand-in, its own adjoint, for both
    assert operators["status"] == "checked" and "gradcheck" in operators["ran"], operators
    assert operators["inputs"]["detail"] == "same (3, 4): x (3, 4), forward_map=identity, adjoint_map=identity"
    projected = entries["ProjectedOnto"]
    assert projected["status"] == "no-inputs", projected
    assert projected["reason"].startswith("could not build inputs: needs an object for `projector` (forward reads its "
                                          "`.basis`; only a stand-in callable was tried)"), projected
    nested = entries["NoisyThreshold"]
    assert nested["status"] == "no-inputs", nested
    assert nested["reason"].startswith("could not build inputs: forward calls `Threshold.apply` with 1 argument(s) "
                                       "missing ('level') on every input tried"), nested
    shifted = entries["ShiftedStep"]
    assert shifted["status"] == "no-inputs" and shifted["reason"].startswith(
        "could not build inputs: forward calls `shifted()` with 1 argument(s) missing ('offset') on every input tried"), shifted
    # A reason, not a finding: nothing certain says which argument the author meant.
    assert not [f for f in findings if f["function_class"] in ("AdjointApplied", "ProjectedOnto", "NoisyThreshold",
                                                                "ShiftedStep")
                and f["code"].startswith("AGL9")]
    assert "NoisyThreshold: not checked: could not build inputs: forward calls `Threshold.apply`" in result.stderr


def test_ranks_dtypes_and_grids_read_from_code_and_errors():
    """The readers themselves, on the texts the fixture's classes and published packages raise."""
    from autograd_lint.dynamic import synthesis

    assert synthesis.wanted_ranks(["forward raised ValueError: not enough values to unpack (expected 4, got 2)",
                                   "forward raised IndexError: Dimension out of range (expected to be in range "
                                   "of [-2, 1], but got 2)", "forward raised ValueError: log_probs must be 5D"]) \
        == [4, 3, 5]
    assert synthesis.wanted_ranks(["not enough values to unpack (expected 2, got 1)"]) == []  # plans cover 2
    assert [synthesis.ranked_shape(rank) for rank in (3, 4, 5)] == [(3, 2, 4), (2, 3, 2, 4), (2, 2, 3, 2, 4)]
    slots = [synthesis.Slot("acts", synthesis.FLOAT, guessed=True), synthesis.Slot("labels", synthesis.INDEX),
             synthesis.Slot("act_lens", synthesis.FLOAT, guessed=True)]
    import inspect

    parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in ("acts", "labels", "act_lens")]
    (typed,) = synthesis._with_dtypes(parameters, slots, ["forward raised TypeError: labels must be torch.int32"])
    assert [(slot.name, slot.kind, slot.dtype) for slot in typed] == [
        ("acts", synthesis.FLOAT, "int64"), ("labels", synthesis.INDEX, "int32"), ("act_lens", synthesis.INDEX, "int32")]
    assert not list(synthesis._with_dtypes(parameters, slots, ["forward raised TypeError: unsupported operand"]))
    boolean = "forward raised RuntimeError: where expected condition to be a boolean tensor, but got a tensor with dtype Double"
    flags = [synthesis.Slot("x", synthesis.FLOAT), synthesis.Slot("converged", synthesis.FLOAT)]
    flag_parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in ("x", "converged")]
    (flagged,) = synthesis._with_dtypes(flag_parameters, flags, [boolean])
    assert [(slot.name, slot.kind, slot.values) for slot in flagged] == [
        ("x", synthesis.FLOAT, ()), ("converged", synthesis.MASK, (True,))]
    # Only a flag's name makes a mask of it: `scale` stays a float, and nothing is retried.
    assert not list(synthesis._with_dtypes(parameters[:2], slots[:2], [boolean]))
