"""``--dynamic`` confirmation end to end: the real CLI over fixtures/dynamic/confirm/, as a user runs it.

tests/test_confirm.py calls ``confirm_finding`` in this process; here the whole path runs: the
child process per module, the input search (declared examples first), the confirmation of each
static finding, the merge of runtime failures into the static findings that explain them, and
the reporters. One run over the directory (module-scoped) feeds the per-code tests; it takes about
12 s on two cores with the fork server (about 115 s with one interpreter per module, each paying
the torch import and the first backward).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_cli

pytest.importorskip("torch")

from autograd_lint.dynamic.confirm import CONFIRMABLE_CODES  # noqa: E402

CONFIRM = REPO_ROOT / "fixtures" / "dynamic" / "confirm"
CODES = sorted(CONFIRMABLE_CODES)

# What the evidence must say, per code: PyTorch's own words or the change that was observed.
EVIDENCE = {
    "AGL101": r"returned an incorrect number of gradients \(expected 2, got 1\)",
    "AGL102": r"TypeError: .*backward\(\) takes 2 positional arguments but 3 were given",
    "AGL104": r"DeprecationWarning: .*should not be instantiated",
    "AGL105": r"NotImplementedError: You must implement either the backward or vjp",
    "AGL106": r"^HalfNewStyle\.apply\(\.\.\.\) raised TypeError: missing a required argument: 'x' "
              r"\(with declared inputs @example #1, on which forward raises\)$",
    "AGL107": r"returned \(None\) although needs_input_grad=\(True,\)",
    "AGL108": r"is the same when grad_output is doubled",
    "AGL201": r"ctx\.\w+ is a Tensor \(4, 5\) float64 kept as an attribute",
    "AGL207": r"ctx\.\w+ is a Tensor \(4, 5\) float64 kept as an attribute",
    "AGL202": r"^TypeError: save_for_backward can only save variables, but argument 1 is of type int "
              r"\(with declared inputs @example #1, on which forward raises\)$",
    "AGL203": r"ctx\.saved_tensors was read during forward/setup_context and gave tuple \(\)",
    "AGL204": r"save_for_backward was called 2 times in one apply",
    "AGL205": r"ValueError: too many values to unpack",
    "AGL206": r"AttributeError: .*'scale'",
    "AGL301": r"grad_output 0 changed in place by backward \(version 0 -> 1",
    "AGL302": r"saved tensor 0 \(input 0\) changed in place by backward",
    "AGL303": r"input 0 changed in place by forward without mark_dirty",
    "AGL304": r"version counter|gradgradcheck failed",
    "AGL305": r"gradgradcheck failed: GradcheckError",
    "AGL306": r"backward with output [01] unused \(its gradient None\) raised TypeError: unsupported operand",
    "AGL401": r"ctx\.needs_input_grad\[0\] is False",
    "AGL402": r"float32 gradient for float64 input 0|changes with torch's default dtype|"
              r"index_add_\(\): self \(Float\) and source \(Double\) .* and ran with float64",
    "AGL601": r"torch\.func\.vmap over Double raised RuntimeError: .*both generate_vmap_rule=True and an overridden vmap",
    "AGL602": r"torch\.func\.jvp over Exp raised ValueError: not enough values to unpack .*saved_tensors was \(\) in jvp",
    "AGL603": r"backward raised (RuntimeError: expected m1 and m2 to have the same dtype.*lacks "
              r"@torch\.amp\.custom_bwd|AttributeError: .*_fwd_used_autocast.*only @custom_fwd sets)",
    "AGL307": r"output 0 is a view of an input; output\.add_\(0\) raised RuntimeError: .*created inside a custom Function",
    "AGL308": r"backward returned None for input 2, but the outputs change with it: .*it never trains",
    "AGL403": r"when the gradient arrives (transposed|expanded|interleaved).*backward returns other gradients than "
              r"for the same values contiguous",
    "AGL605": r"torch\.func\.vjp over Double raised RuntimeError: .*it must override the setup_context staticmethod",
    "AGL606": r"output 0 of Scale changes with the captured `weight` .*its \.grad is None",
}


def run(*args: str, cwd: Path = REPO_ROOT, timeout: float = 900) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def confirm_run(tmp_path_factory):
    """``autograd-lint --dynamic --format json --select ALL --no-cache fixtures/dynamic/confirm``."""
    report_path = tmp_path_factory.mktemp("confirm") / "report.json"
    result = run("--dynamic", "--format", "json", "--select", "ALL", "--no-cache",
                 "--dynamic-report", str(report_path), "fixtures/dynamic/confirm")
    assert result.returncode == 1, result.stderr
    by_file: dict[str, list[dict]] = {}
    for finding in json.loads(result.stdout)["findings"]:
        by_file.setdefault(Path(finding["path"]).name, []).append(finding)
    return result, by_file, json.loads(report_path.read_text(encoding="utf-8"))


def test_every_code_has_an_expected_evidence_pattern():
    assert sorted(EVIDENCE) == CODES


@pytest.mark.parametrize("code", CODES)
def test_the_confirmed_fixture_comes_back_confirmed_from_the_cli(confirm_run, code):
    _, by_file, _ = confirm_run
    findings = [f for f in by_file.get(f"{code}_confirmed.py", []) if f["code"] == code]
    assert findings, f"the static rule must flag {code}_confirmed.py"
    for finding in findings:
        assert finding["confirmation"] == "confirmed", (finding["line"], finding["evidence"])
        assert "\n" not in finding["evidence"]
        assert re.search(EVIDENCE[code], finding["evidence"]), finding["evidence"]


@pytest.mark.parametrize("code", CODES)
def test_the_near_miss_static_findings_come_back_not_reproduced(confirm_run, code):
    _, by_file, _ = confirm_run
    for finding in (f for f in by_file.get(f"{code}_near_miss.py", []) if f["code"] == code):
        assert finding["confirmation"] == "not-reproduced", (finding["line"], finding["evidence"])
        assert len(finding["evidence"]) >= 20, finding["evidence"]


def test_a_forward_that_raises_is_the_evidence_and_its_inputs_are_not_counted_as_built(confirm_run):
    _, by_file, report = confirm_run
    (unpack,) = [f for f in by_file["AGL203_confirmed.py"] if f["code"] == "AGL203" and f["line"] == 30]
    assert unpack["evidence"].endswith("apply then raised ValueError: not enough values to unpack (expected 1, "
                                       "got 0) (with declared inputs @example #1, on which forward raises)")
    entries = {entry["function_class"]: entry for entry in report["functions"]}
    for name in ("HalfNewStyle", "SaveNumber", "UnpackTooEarly"):
        assert entries[name]["inputs"] is None and "forward raised" in entries[name]["reason"], entries[name]
        assert entries[name]["ran"] == [] and entries[name]["runtime_findings"] == []


def test_runtime_failures_explained_by_a_confirmed_finding_are_merged_into_it(confirm_run):
    result, by_file, report = confirm_run
    codes = {name: {f["code"] for f in findings} for name, findings in by_file.items()}
    # The raw backward check and gradcheck fail on these classes, for the bug the static rule names.
    assert codes["AGL101_confirmed.py"] & {"AGL101", "AGL903"} == {"AGL101"}
    assert codes["AGL102_confirmed.py"] & {"AGL102", "AGL901"} == {"AGL102"}
    assert codes["AGL305_confirmed.py"] & {"AGL305", "AGL902"} == {"AGL305"}
    (count,) = [f for f in by_file["AGL101_confirmed.py"] if f["code"] == "AGL101"]
    assert count["evidence"].endswith("; also fails AGL903 (merged into this finding): "
                                      "backward returned 1 value for 2 inputs")
    entries = {entry["function_class"]: entry for entry in report["functions"]}
    assert entries["MulOneGrad"]["runtime_findings"] == ["AGL903"]
    assert entries["MulOneGrad"]["merged"] == [f"AGL903 -> AGL101 (line {count['line']})"]
    merged = sum(len(entry["merged"]) for entry in report["functions"])
    assert merged >= 3 and f"(and {merged} merged into the static findings that explain them)" in result.stderr


def test_a_runtime_failure_no_confirmed_finding_explains_is_still_reported(confirm_run):
    _, by_file, _ = confirm_run
    # .data.clone() saved in forward (a copy, not an alias) and .data.numel(): AGL304 stays silent
    # on both reads, but the detached copy does break double backward: AGL902 stays, on its own.
    near_miss = by_file["AGL304_near_miss.py"]
    assert not [f for f in near_miss if f["code"] == "AGL304"]
    (gradgrad,) = [f for f in near_miss if f["code"] == "AGL902"]
    assert gradgrad["confirmation"] is None and gradgrad["evidence"] == "ran on declared inputs @example #1"


@pytest.fixture(scope="module")
def two_files():
    """A forward that raises (AGL202) and a merged runtime failure (AGL101), in text and SARIF."""
    return ["fixtures/dynamic/confirm/AGL202_confirmed.py", "fixtures/dynamic/confirm/AGL101_confirmed.py"]


def test_text_output_shows_the_confirmation_and_its_evidence(two_files):
    result = run("--dynamic", "--no-cache", *two_files)
    save = next(line for line in result.stdout.splitlines() if " AGL202 " in line)
    assert save.startswith("fixtures/dynamic/confirm/AGL202_confirmed.py:13:")
    assert save.endswith("[confirmed: TypeError: save_for_backward can only save variables, but argument 1 "
                         "is of type int (with declared inputs @example #1, on which forward raises)]"), save
    count = next(line for line in result.stdout.splitlines() if " AGL101 " in line)
    assert re.search(r"\[confirmed: RuntimeError: function MulOneGradBackward returned an incorrect number of "
                     r"gradients .*; also fails AGL903 \(merged into this finding\): backward returned 1 value "
                     r"for 2 inputs\]$", count), count
    assert not re.search(r":\d+:\d+: AGL903 ", result.stdout), result.stdout


def test_sarif_output_carries_the_confirmation_and_its_evidence(two_files):
    sarif = json.loads(run("--dynamic", "--no-cache", "--format", "sarif", *two_files).stdout)
    results = {result["ruleId"]: result for result in sarif["runs"][0]["results"]}
    assert "AGL903" not in results
    save = results["AGL202"]["properties"]
    assert save["confirmation"] == "confirmed"
    assert save["evidence"].startswith("TypeError: save_for_backward can only save variables")
    assert "also fails AGL903" in results["AGL101"]["properties"]["evidence"]


def test_github_annotations_carry_the_confirmation_and_its_evidence(two_files):
    result = run("--dynamic", "--no-cache", "--format", "github", *two_files)
    (save,) = [line for line in result.stdout.splitlines() if "title=AGL202" in line]
    assert save.startswith("::error file=fixtures/dynamic/confirm/AGL202_confirmed.py,line=13,")
    assert save.endswith("[confirmed: TypeError: save_for_backward can only save variables, but argument 1 "
                         "is of type int (with declared inputs @example #1, on which forward raises)]"), save
