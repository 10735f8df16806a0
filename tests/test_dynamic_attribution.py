"""``--dynamic``: guided backpropagation and DeConvNet, the attribution rules that replace a ReLU's
backward by the positive part of the incoming gradient, are AGL908 when the class (or its module)
says so, and the words with other numbers are AGL901 (fixtures/dynamic/attribution.py; the same
numbers without the words, fixtures/dynamic/by_design.py's GuidedReLU, are AGL909 in
tests/test_dynamic.py; the real CLI, one child, wide time limits)."""

from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT, WIDE_DYNAMIC_TIMEOUT, assert_no_traceback, run_cli

pytest.importorskip("torch")

MODULE = "fixtures/dynamic/attribution.py"
RULE = "attribution rule (guided backpropagation, DeConvNet): backward passes on only the positive part of the " \
       "incoming gradient"
EXPECTED = {
    "GuidedBackpropReLU": ("AGL908", (RULE + ", through forward's gate", 'its documentation says "guided backprop"',
                                      "backward is not linear in its gradient")),
    "DeConvNetReLU": ("AGL908", (RULE + ", not the gradient", 'its documentation says "DeConvNet"')),
    "GuidedBackpropReLUDoubled": ("AGL901", ("gradcheck failed for input 0 (`x`)",)),
}


def test_attribution_rules_are_by_design_and_their_near_misses_errors():
    result = run_cli("--dynamic", "--dynamic-timeout", WIDE_DYNAMIC_TIMEOUT, "--extend-select", "AGL908",
                     "--format", "json", "--no-cache", MODULE, cwd=REPO_ROOT, timeout=900)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr
    found = {f["function_class"]: f for f in json.loads(result.stdout)["findings"] if f["code"].startswith("AGL9")}
    assert {name: f["code"] for name, f in found.items()} == {name: code for name, (code, _) in EXPECTED.items()}
    for name, (code, words) in EXPECTED.items():
        assert found[name]["severity"] == ("info" if code == "AGL908" else "error"), found[name]
        for word in words:
            assert word in found[name]["message"], (name, found[name]["message"])
