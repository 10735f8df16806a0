"""``--dynamic``: layer-wise relevance propagation (LRP), a gradient that is not the derivative by
design (AGL908), and a backward that runs once per forward, next to near misses that are real bugs
(AGL901): fixtures/dynamic/relevance.py.

The real CLI, one child: ``--dynamic --extend-select AGL908 --format json`` on that module. The
time limits are wide (tens of times what the module takes on an idle core), so the test holds on
two busy cores.
"""

from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT, WIDE_DYNAMIC_TIMEOUT, assert_no_traceback, run_cli

pytest.importorskip("torch")

MODULE = "fixtures/dynamic/relevance.py"
LRP = "relevance propagation (LRP): "
CONSERVED = "the incoming values as relevance, conserved"
# Class -> the code --dynamic reports for it, and words its message must hold.
EXPECTED = {
    "EpsilonLinearRelevance": ("AGL908", (LRP, CONSERVED, "input 0 (`inputs`)")),
    "SoftmaxTaylorRelevance": ("AGL908", (LRP, "by the epsilon rule (gradient times input over output)")),
    "IdentityRuleRMSNorm": ("AGL908", (LRP, CONSERVED)),
    "LayerNormRelevanceOnce": ("AGL908", (LRP, CONSERVED, "backward runs once per forward")),
    "ReluEpsilonRelevance": ("AGL908", (LRP, "gradcheck passed on these inputs", "gradgradcheck failed",
                                        "not meant to be differentiated again")),
    # The identity rule's numbers, without the words: a forgotten factor 3.
    "TimesThreeForgotDerivative": ("AGL901", ("gradcheck failed for input 0 (`x`)",)),
    # The words, with a backward that does not conserve relevance (no division by the output).
    "EpsilonLinearForgotNormalization": ("AGL901", ("gradcheck failed for input 0 (`inputs`)",)),
    # Once per forward, not LRP: a doubled derivative (the correct twin, TanhThroughSavedGraph, is silent).
    "TanhThroughSavedGraphDoubled": ("AGL901", ("gradcheck failed for input 0 (`x`)",
                                                "backward runs once per forward")),
}
ONCE = {"LayerNormRelevanceOnce", "TanhThroughSavedGraph", "TanhThroughSavedGraphDoubled"}


@pytest.fixture(scope="module")
def relevance_run(tmp_path_factory):
    report_path = tmp_path_factory.mktemp("relevance") / "report.json"
    result = run_cli("--dynamic", "--dynamic-timeout", WIDE_DYNAMIC_TIMEOUT, "--extend-select", "AGL908",
                     "--format", "json", "--no-cache", "--dynamic-report", str(report_path), MODULE,
                     cwd=REPO_ROOT, timeout=900)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr  # the near misses are errors
    findings = [f for f in json.loads(result.stdout)["findings"]
                if f["code"] in ("AGL901", "AGL902", "AGL908")]  # AGL906 (autocast) is another matter
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return findings, report


def test_relevance_propagation_is_agl908_and_each_near_miss_agl901(relevance_run):
    findings, _ = relevance_run
    assert {f["function_class"]: f["code"] for f in findings} == {name: code for name, (code, _) in EXPECTED.items()}
    assert len(findings) == len(EXPECTED), findings  # one finding a class: no AGL902 beside an AGL908
    for finding in findings:
        _, words = EXPECTED[finding["function_class"]]
        for word in words:
            assert word in finding["message"], finding
        if finding["code"] == "AGL901":
            assert LRP not in finding["message"], finding


def test_every_class_is_checked_and_the_run_once_backward_is_named(relevance_run):
    _, report = relevance_run
    entries = {e["function_class"]: e for e in report["functions"]}
    assert set(entries) == set(EXPECTED) | {"TanhThroughSavedGraph"}
    for name, entry in entries.items():
        assert entry["status"] == "checked" and "gradcheck" in entry["ran"], entry
    once = [name for name, entry in entries.items()
            if any("backward runs once per forward" in note for note in entry["skipped"])]
    assert set(once) == ONCE, once  # not a failed gradcheck: judged one forward a row
    assert not entries["TanhThroughSavedGraph"]["runtime_findings"], entries["TanhThroughSavedGraph"]
    assert "gradgradcheck" in entries["ReluEpsilonRelevance"]["ran"]
