"""``--dynamic``: three kinds of gradient that differ from forward's derivative by design (AGL908),
each next to a near miss that is a real bug (AGL901): fixtures/dynamic/by_design_kinds.py.

The real CLI, one child: ``--dynamic --extend-select AGL908 --format json`` on that module. The
time limits are wide (tens of times what the module takes on an idle core), so the test holds on
two busy cores.
"""

from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT, WIDE_DYNAMIC_TIMEOUT, assert_no_traceback, run_cli

pytest.importorskip("torch")

MODULE = "fixtures/dynamic/by_design_kinds.py"
# Class -> the code --dynamic reports for it, and how the message goes on after "<Class>: ".
EXPECTED = {
    # 1. A fixed hyper-parameter input of an estimator, and a smooth Function that forgot a weight.
    "QuantizeStepSTE": ("AGL908", "straight-through or surrogate estimator with a fixed hyper-parameter: "
                                  "forward is piecewise constant in input 0 (`x`)"),
    "MulForgotWeightGradient": ("AGL901", "gradcheck failed for input 1 (`w`)"),
    # 2. A fixed-point forward with the real-valued formula's backward, and one that forgot a factor.
    "FixedPointLeak": ("AGL908", "quantized forward, real-valued backward: forward rounds to a grid in input 0 "
                                 "(`voltage`), input 1 (`current`)"),
    "FixedPointSquareForgotFactor": ("AGL901", "gradcheck failed for input 0 (`voltage`)"),
    # The near miss's numbers, documented as a surrogate: an estimator, whatever its slope.
    "FixedPointSquareDampedSurrogate": ("AGL908", "straight-through or surrogate estimator: forward is piecewise "
                                                  "constant in input 0 (`voltage`)"),
    # 3. A gradient token, the same numbers without the words, and the words on a forward that moves.
    "SpikeGradientToken": ("AGL908", "gradient token: forward's outputs do not move when any input does"),
    "ZerosForgotForward": ("AGL901", "gradcheck failed for input 0 (`x`)"),
    "SpikeCountTokenBug": ("AGL901", "gradcheck failed for input 0 (`spikes`)"),
}


@pytest.fixture(scope="module")
def kinds_run(tmp_path_factory):
    report_path = tmp_path_factory.mktemp("by_design_kinds") / "report.json"
    result = run_cli("--dynamic", "--dynamic-timeout", WIDE_DYNAMIC_TIMEOUT, "--extend-select", "AGL908",
                     "--format", "json", "--no-cache", "--dynamic-report", str(report_path), MODULE,
                     cwd=REPO_ROOT, timeout=900)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr  # the near misses are errors
    findings = [f for f in json.loads(result.stdout)["findings"] if f["code"].startswith("AGL9")]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return findings, report


def test_each_by_design_kind_is_agl908_and_each_near_miss_agl901(kinds_run):
    findings, report = kinds_run
    assert {f["function_class"]: f["code"] for f in findings} == {name: code for name, (code, _) in EXPECTED.items()}
    assert len(findings) == len(EXPECTED), findings  # one finding a class
    for name in EXPECTED:
        (entry,) = [e for e in report["functions"] if e["function_class"] == name]
        assert entry["status"] == "checked" and "gradcheck" in entry["ran"], entry
        assert "gradgradcheck" not in entry["ran"], entry  # gradcheck failed, by design or not


def test_each_message_names_the_kind_or_the_failing_input(kinds_run):
    findings, _ = kinds_run
    for finding in findings:
        name = finding["function_class"]
        _, start = EXPECTED[name]
        assert finding["message"].startswith(f"{name}: {start}"), finding["message"]
        assert finding["severity"] == ("info" if finding["code"] == "AGL908" else "error"), finding


def test_the_messages_say_what_makes_each_kind(kinds_run):
    message = {f["function_class"]: f["message"] for f in kinds_run[0]}
    assert "input 1 (`step`) is a fixed hyper-parameter (a step size, a threshold, quantization levels): forward " \
        "depends on it and backward gives it no gradient" in message["QuantizeStepSTE"]
    assert "over steps of many grid cells its slope is backward's gradient" in message["FixedPointLeak"]
    assert "backward differentiates the unrounded formula" in message["FixedPointLeak"]
    assert 'its documentation says "token"' in message["SpikeGradientToken"]
    assert 'its documentation says "surrogate"' in message["FixedPointSquareDampedSurrogate"].lower()
    # The near miss's forward finite differences are zero: the message says what is wrong instead.
    forgot = message["FixedPointSquareForgotFactor"]
    assert "forward rounds a smooth formula to a fine grid in input 0 (`voltage`)" in forgot, forgot
    assert " its slope is 2.0" in forgot and "times backward's gradient" in forgot, forgot
    # The estimator is for `x`: `w` of a smooth product gets no such excuse, nor any by-design note.
    assert "by design" not in message["MulForgotWeightGradient"]
    assert "input 0" not in message["MulForgotWeightGradient"]
