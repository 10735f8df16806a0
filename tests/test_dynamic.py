"""``--dynamic``: the real CLI in a subprocess, real torch, the modules of fixtures/dynamic/.

One run over fixtures/dynamic/*.py (module-scoped: each module costs a child process and a torch
import) feeds most tests; the others make their own small projects under tmp_path.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, assert_no_traceback, load_module, run_cli, write

from autograd_lint.dynamic.runner import STATUSES

torch = pytest.importorskip("torch")

DYNAMIC = REPO_ROOT / "fixtures" / "dynamic"
# Every module of this run should finish: its limit is many times what a module takes (about a
# second each, tens of seconds on two busy cores). The modules that hang for sure are checked in
# tests/test_dynamic_resume.py, with a short limit of their own.
WIDE_TIMEOUT = 300
HANGING = ("hangs.py", "hang_in_middle.py", "factory_hangs_in_middle.py")


def fixture_modules() -> list[str]:
    return sorted(str(path.relative_to(REPO_ROOT)) for path in DYNAMIC.glob("*.py") if path.name not in HANGING)


def run(*args: str, cwd: Path = REPO_ROOT, timeout: float = 600) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory):
    report_path = tmp_path_factory.mktemp("dynamic") / "report.json"
    result = run("--dynamic", "--dynamic-timeout", str(WIDE_TIMEOUT), "--format", "json", "--no-cache",
                 "-j", "2", "--dynamic-report", str(report_path), *fixture_modules(), timeout=1800)
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return result, findings, report


def runtime(findings: list[dict], module: str, code: str) -> dict[str, dict]:
    return {f["function_class"]: f for f in findings if f["path"].endswith(module) and f["code"] == code}


def function(report: dict, name: str) -> dict:
    (entry,) = [f for f in report["functions"] if f["function_class"] == name]
    return entry


def test_wrong_formulas_fail_gradcheck_with_the_input_and_difference(fixture_run):
    _, findings, _ = fixture_run
    failed = runtime(findings, "wrong_formulas.py", "AGL901")
    assert set(failed) == {"SignFlipSin", "MissingTransposeMatmul", "MissingBroadcastSumBias", "WrongConstantSquare",
                           "SinMixedGradient", "SignFlipSinWithSavedCopy", "NoGradientAtAll"}
    # A non-differentiable output is left out of the Jacobians, as gradcheck leaves it out: the
    # message still names the input (it said only "(Jacobian mismatch)").
    assert "input 0 (`x`): max |analytical - numerical| = " in failed["SignFlipSinWithSavedCopy"]["message"]
    assert "input 1 (`bias`)" in failed["MissingBroadcastSumBias"]["message"]
    assert "input 1 (`b`)" in failed["MissingTransposeMatmul"]["message"]
    for finding in failed.values():
        difference = float(re.search(r"max \|analytical - numerical\| = ([0-9.e+-]+)", finding["message"]).group(1))
        assert difference > 0.1
        # A runtime finding has no confirmation (that word is for static findings): its evidence
        # says what it ran on.
        assert finding["confirmation"] is None and finding["evidence"].startswith(
            "ran on declared inputs " if finding["function_class"] == "SinMixedGradient" else "ran on synthesized inputs ")
        assert finding["severity"] == "error"
    # Anchored on the class line.
    lines = (DYNAMIC / "wrong_formulas.py").read_text().splitlines()
    assert lines[failed["SignFlipSin"]["line"] - 1].startswith("class SignFlipSin(")


def test_correct_twins_pass_gradcheck_and_gradgradcheck(fixture_run):
    _, findings, report = fixture_run
    runtime_findings = {(f["function_class"], f["code"], f["severity"]) for f in findings
                        if f["path"].endswith("correct_twins.py") and f["code"].startswith("AGL9")}
    # Right in float32, but an undecorated matmul crashes under autocast: a warning, not an error.
    assert runtime_findings == {("TransposeMatmul", "AGL906", "warning")}
    for name in ("Sin", "TransposeMatmul", "BroadcastSumBias", "Square"):
        assert {"gradcheck", "gradgradcheck"} <= set(function(report, name)["ran"]), name


def test_wrong_second_derivative_gives_agl902_only_where_backward_is_differentiable(fixture_run):
    _, findings, report = fixture_run
    assert set(runtime(findings, "second_derivative.py", "AGL902")) == {"DetachedCube"}
    assert not runtime(findings, "second_derivative.py", "AGL901")
    assert "gradgradcheck" not in function(report, "OnceDifferentiableCube")["ran"]
    assert any("once_differentiable" in reason for reason in function(report, "OnceDifferentiableCube")["skipped"])


@pytest.mark.parametrize("module, status, reason", [
    ("aborts.py", "crashed", "the module crashed the interpreter (SIGABRT)"),
    ("exits.py", "import-failed", "called sys.exit(3) on import"),
    ("import_error.py", "import-failed",
     "failed to import: ModuleNotFoundError: No module named 'autograd_lint_no_such_module'"),
])
def test_broken_modules_are_not_checked_and_the_run_goes_on(fixture_run, module, status, reason):
    result, findings, report = fixture_run
    # Named from the source, as the child never got to list the class.
    assert f"warning: --dynamic: fixtures/dynamic/{module}:8: NeverChecked: not checked: {reason}\n" in result.stderr
    assert [(entry["function_class"], entry["status"], entry["reason"]) for entry in report["functions"]
            if entry["path"].endswith(module)] == [("NeverChecked", status, reason)]
    assert not [f for f in findings if f["path"].endswith(module) and f["code"].startswith("AGL9")]
    assert_no_traceback(result)


def test_static_findings_of_a_crashed_module_carry_the_reason(fixture_run):
    _, findings, _ = fixture_run
    (ctx_attribute,) = [f for f in findings if f["path"].endswith("aborts.py")]
    assert ctx_attribute["code"] == "AGL201"
    assert (ctx_attribute["confirmation"], ctx_attribute["evidence"]) == (
        "unverified", "the module crashed the interpreter (SIGABRT)")


def test_every_static_finding_has_a_confirmation_and_every_runtime_one_its_inputs(fixture_run):
    _, findings, _ = fixture_run
    static = [f for f in findings if not f["code"].startswith("AGL9")]
    runtime_only = [f for f in findings if f["code"].startswith("AGL9")]
    assert static and all(f["confirmation"] in ("confirmed", "not-reproduced", "unverified") for f in static)
    assert runtime_only and all(f["confirmation"] is None and f["evidence"].startswith("ran on ")
                                for f in runtime_only)
    assert all(f["evidence"] for f in findings)


def test_inputs_come_from_declarations_call_sites_and_signatures(fixture_run):
    _, _, report = fixture_run
    assert function(report, "Reduce")["inputs"]["source"] == "declared"
    assert function(report, "Reduce")["inputs"]["detail"] == "@example #1"
    assert function(report, "Gather")["inputs"]["source"] == "declared"
    assert "__autograd_lint_examples__" in function(report, "Gather")["inputs"]["detail"]
    mode_scale = function(report, "ModeScale")["inputs"]
    # The first call site passes a parameter (not evaluable); the second is used.
    assert mode_scale["source"] == "call-site" and mode_scale["detail"].endswith("call_site_only.py:27")
    assert mode_scale["shapes"] == "(2, 5), 'half'"
    assert function(report, "Sin")["inputs"]["source"] == "synthesized"
    assert function(report, "ApplyFn")["inputs"] is None
    assert function(report, "ApplyFn")["reason"].startswith("could not build inputs")


def test_a_forward_that_raises_confirms_only_the_rule_whose_error_it_raises(fixture_run):
    _, findings, report = fixture_run
    saved = {f["function_class"]: f for f in findings
             if f["path"].endswith("forward_raises.py") and f["code"] == "AGL202"}
    # Forward raises PyTorch's own AGL202 error on every synthesized input: that is the evidence.
    assert saved["SaveScale"]["confirmation"] == "confirmed"
    assert saved["SaveScale"]["evidence"] == (
        "TypeError: save_for_backward can only save variables, but argument 1 is of type float "
        "(with synthesized inputs same (3, 4): x (3, 4), on which forward raises)")
    # Forward raises its own error before it reaches save_for_backward: nothing was shown.
    assert saved["VolumeOnly"]["confirmation"] == "unverified"
    assert saved["VolumeOnly"]["evidence"].startswith(
        "VolumeOnly.apply(...) raised ValueError: expects a 5-d volume (N, C, D, H, W) (with synthesized")
    # The first guess fails on a shape before forward reaches save_for_backward; a later one gets there.
    assert saved["ShiftEps"]["confirmation"] == "confirmed"
    assert saved["ShiftEps"]["evidence"].startswith(
        "TypeError: save_for_backward can only save variables, but argument 1 is of type float (with synthesized "
        "inputs broadcast (3, 4) + (4,)")
    assert "forward raised RuntimeError: The size of tensor a (4) must match" in function(report, "ShiftEps")["reason"]
    for name in ("SaveScale", "VolumeOnly", "ShiftEps"):
        assert function(report, name)["inputs"] is None
        assert "forward raised" in function(report, name)["reason"]


def test_a_call_of_the_wrapper_around_apply_is_a_call_site(fixture_run):
    _, _, report = fixture_run
    temper = function(report, "Temper")["inputs"]
    # `how` is a string synthesis cannot guess; the test calls `temper(scores)`, and the wrapper's
    # default "soft" fills it in. The first call (a parameter) is skipped.
    assert temper["source"] == "call-site" and temper["detail"].endswith("wrapper_usage.py:14 (through temper())")
    assert temper["shapes"] == "(2, 6), 'soft'"


def test_wrapper_calls_bind_like_python_keywords_defaults_and_all(tmp_path):
    import importlib.util

    from autograd_lint.dynamic import callsites

    ops = write(tmp_path / "ops.py", """\
import torch


class Affine(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor, shift):
        ctx.factor = factor
        return x * factor + shift

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.factor, None, None


def affine(x, factor=2.0, *, shift=0.0):
    x = x.double()
    return Affine.apply(x, factor, shift)
""")
    usage = write(tmp_path / "test_ops.py", """\
import torch
from ops import affine

def test_it():
    affine(torch.ones(2), 3.0, 1.0)        # shift is keyword-only: Python raises, so skipped
    affine(torch.ones(2, 3), shift=1.5)    # factor from the default
    affine(torch.ones(4), factor=torch.tensor(0.5))
""")
    spec = importlib.util.spec_from_file_location("_wrapper_ops", ops)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = list(callsites.candidates(module.Affine, module, [str(ops), str(usage)]))
    assert [c.detail.rsplit(":", 1)[1] for c in found] == ["6 (through affine())", "7 (through affine())"]
    x, factor, shift = found[0].recipe()
    assert (tuple(x.shape), x.dtype, factor, shift) == ((2, 3), torch.float64, 2.0, 1.5)
    x, factor, shift = found[1].recipe()
    assert tuple(x.shape) == (4,) and float(factor) == 0.5 and shift == 0.0


def test_synthesis_tries_index_columns_masks_and_leaving_optional_tensors_out(fixture_run):
    _, findings, report = fixture_run
    gather = function(report, "TargetLogProb")
    assert gather["inputs"]["shapes"] == "(3, 4), (3, 1) int64, (3, 4) bool"
    segments = function(report, "SegmentSum")  # `lengths: Optional[Tensor]`, split by: segment lengths
    assert segments["inputs"]["shapes"] == "(3, 4), (3,) int64"
    gram = function(report, "BatchedGram")  # `batch, rows, cols = x.size()`, then `assert rows == cols`
    assert gram["inputs"]["shapes"] == "(3, 4, 4)"
    stated = function(report, "MatrixTimesVector")  # `K : Tensor [n, n]`, `z : Tensor [n]`
    assert stated["inputs"]["shapes"] == "(4, 4), (4,)"
    for entry in (gather, segments, gram, stated):
        assert {"gradcheck", "gradgradcheck"} <= set(entry["ran"])
    assert not [f for f in findings if f["path"].endswith("guessed_shapes.py") and f["code"].startswith("AGL9")]


def test_guessed_inputs_on_which_backward_raises_give_no_runtime_finding(fixture_run):
    _, _, report = fixture_run
    recorded = function(report, "Recorded")
    assert recorded["inputs"]["source"] == "synthesized" and recorded["ran"] == ["raw backward"]
    assert recorded["runtime_findings"] == []
    (reason,) = recorded["skipped"]
    assert reason.startswith("gradcheck: backward raised on every synthesized input (backward raised "
                             "AttributeError: 'Tensor' object has no attribute 'append')")


def test_raw_backward_results_are_checked(fixture_run):
    _, findings, report = fixture_run
    wrong = runtime(findings, "raw_backward.py", "AGL903")
    assert wrong["TooFewGrads"]["message"] == "TooFewGrads: backward returned 1 value for 2 inputs"
    assert "is float32, the input float64" in wrong["Float32Grad"]["message"]
    assert "Dropout" not in runtime(findings, "raw_backward.py", "AGL901")
    # A random forward is checked with its draws fixed (reseeding.py), and passes.
    dropout = function(report, "Dropout")
    assert "gradcheck" in dropout["ran"] and dropout["skipped"][0].startswith("forward draws random numbers")


def test_random_forwards_are_checked_with_their_draws_fixed(fixture_run):
    _, findings, report = fixture_run
    assert set(runtime(findings, "random_forward.py", "AGL901")) == {"InvertedDropoutUnscaled"}
    assert "with its draws fixed, by reseeding" in runtime(findings, "random_forward.py", "AGL901")[
        "InvertedDropoutUnscaled"]["message"]
    assert function(report, "StochasticRound")["runtime_findings"] == ["AGL908"]  # info, opt-in: report only
    for name in ("InvertedDropout", "InvertedDropoutUnscaled", "StochasticRound"):
        entry = function(report, name)
        assert entry["status"] == "checked" and "gradcheck" in entry["ran"], entry
    noisy = function(report, "NoisyBackward")
    assert noisy["status"] == "partly-checked" and "gradcheck" not in noisy["ran"]
    assert noisy["skipped"] == ["gradcheck: backward draws random numbers of its own (two backward calls on one "
                                "forward gave different gradients, with forward's draws fixed): there is no fixed "
                                "function to compare it with"]


def test_a_backward_that_assumes_a_contiguous_gradient_fails_agl905_and_passes_gradcheck(fixture_run):
    _, findings, report = fixture_run
    strided = runtime(findings, "strided_gradients.py", "AGL905")
    assert set(strided) == {"RawBufferScale", "FlatViewScale"}
    assert re.search(r"RawBufferScale: when the gradient arrives transposed \(stride \(1, \d+\), .*\), backward "
                     r"returns other gradients than for the same values contiguous \(the gradient for input 0 "
                     r"differs by up to [0-9.]+\)", strided["RawBufferScale"]["message"])
    assert "backward raises RuntimeError: view size is not compatible" in strided["FlatViewScale"]["message"]
    assert all(f["severity"] == "error" and f["confirmation"] is None for f in strided.values())
    assert "strided gradients" in function(report, "ContiguousScale")["ran"]
    assert not [f for f in findings if f["path"].endswith("strided_gradients.py") and f["code"] != "AGL905"]
    # gradcheck, which only feeds contiguous gradients, passes all three: this check is not it.
    module = load_module(DYNAMIC / "strided_gradients.py", "strided_gradients")
    for name in ("RawBufferScale", "FlatViewScale", "ContiguousScale"):
        x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(getattr(module, name).apply, (x,)), name
        assert {"gradcheck", "gradgradcheck"} <= set(function(report, name)["ran"]), name


def test_summary_line_counts_sources_and_confirmations(fixture_run):
    result, findings, report = fixture_run
    match = re.search(r"dynamic: (\d+) Function classes: (\d+) checked, (\d+) only partly checked \(no gradcheck; "
                      r"listed above\), (\d+) not checked \(.*; listed above\); "
                      r"inputs built for (\d+) \((\d+)%\): (\d+) declared, (\d+) call sites, (\d+) synthesized; "
                      r"static findings: (\d+) confirmed, (\d+) not-reproduced, (\d+) unverified; "
                      r"runtime findings \(AGL9xx\): (\d+)", result.stderr)
    assert match, result.stderr
    (total, checked, partly, not_checked, built, rate, declared, call_sites, synthesized,
     confirmed, not_reproduced, unverified, runtime_count) = map(int, match.groups())
    assert total == len(report["functions"]) and built == declared + call_sites + synthesized
    sources = [(entry.get("inputs") or {}).get("source") for entry in report["functions"]]
    assert (declared, call_sites, synthesized) == (sources.count("declared"), sources.count("call-site"),
                                                   sources.count("synthesized"))
    # call sites: two from `.apply` calls in the fixtures, two from documented_examples.py's docstrings
    assert declared >= 18 and call_sites == 4 and rate == round(100 * built / total)
    assert checked + partly + not_checked == total
    assert checked == sum(1 for f in report["functions"] if f["status"] == "checked")
    assert partly == sum(1 for f in report["functions"] if f["status"] == "partly-checked")
    # The summary counts what the findings say, one meaning per word.
    static = [f["confirmation"] for f in findings if not f["code"].startswith("AGL9")]
    assert (confirmed, not_reproduced, unverified) == tuple(map(static.count, ("confirmed", "not-reproduced",
                                                                              "unverified")))
    assert runtime_count == sum(1 for f in findings if f["code"].startswith("AGL9"))
    summary = report["summary"]
    assert (summary["function_classes"], summary["checked"], sum(summary["not_checked"].values())) == (
        total, checked, partly + not_checked)
    assert summary["inputs"] == {"declared": declared, "call-site": call_sites, "synthesized": synthesized}
    assert summary["static_findings"] == {"confirmed": confirmed, "not-reproduced": not_reproduced,
                                          "unverified": unverified}


def test_text_output_shows_confirmation_and_sarif_carries_it(tmp_path):
    module = write(tmp_path / "ops.py", (DYNAMIC / "second_derivative.py").read_text())
    text = run("--dynamic", "--no-cache", str(module), cwd=tmp_path)
    # The message names the fix; the suffix says what it ran on (not "confirmed": that word is for
    # static findings, and the summary counts only those).
    assert re.search(r"ops\.py:7:1: AGL902 DetachedCube: gradgradcheck failed: Jacobian mismatch .*; if backward "
                     r"is not meant to be differentiated again, mark it @once_differentiable .*, otherwise build it "
                     r"from differentiable torch ops .* \[ran on synthesized inputs same \(3, 4\): x \(3, 4\)\]$",
                     text.stdout, re.M), text.stdout
    assert "static findings: 0 confirmed, 0 not-reproduced, 0 unverified; runtime findings (AGL9xx): 1" in text.stderr
    sarif = json.loads(run("--dynamic", "--no-cache", "--format", "sarif", str(module), cwd=tmp_path).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "AGL902" and result["properties"]["confirmation"] is None
    assert result["properties"]["evidence"] == "ran on synthesized inputs same (3, 4): x (3, 4)"


def test_static_mode_reports_no_runtime_findings_and_no_confirmation(tmp_path):
    result = run("--format", "json", "--no-cache", str(DYNAMIC / "wrong_formulas.py"), cwd=tmp_path)
    findings = json.loads(result.stdout)["findings"]
    assert all(f["confirmation"] is None and not f["code"].startswith("AGL9") for f in findings)
    assert "dynamic:" not in result.stderr


def test_nothing_is_written_into_the_users_tree(tmp_path):
    project = tmp_path / "project"
    write(project / "helpers.py", "SCALE = 2.0\n")
    write(project / "ops.py", """\
import os
import tempfile

import torch

from helpers import SCALE

# Writes at import time: these must land in autograd-lint's scratch directory, not here.
with open("written_to_cwd.txt", "w") as handle:
    handle.write("x")
tempfile.mkstemp(prefix="user-temp-")


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * SCALE

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * SCALE
""")
    before = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*"))
    result = run("--dynamic", "--no-cache", "project", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "inputs built for 1 (100%)" in result.stderr
    after = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*"))
    assert after == before  # no __pycache__, no written_to_cwd.txt, no temp file


def test_config_examples_feed_inputs(tmp_path):
    write(tmp_path / "pyproject.toml", """\
[tool.autograd-lint.dynamic]
timeout = 120

[tool.autograd-lint.dynamic.examples]
"ops.py:Pick" = [["tensor(4, 3)", "tensor(2, dtype='int64', low=0, high=4)", "rows"]]
""")
    write(tmp_path / "ops.py", """\
import torch


class Pick(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, index, how: str):
        ctx.save_for_backward(index)
        ctx.rows = x.shape[0]
        return x[index] * 2

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        grad = grad_output.new_zeros((ctx.rows,) + tuple(grad_output.shape[1:]))
        grad.index_add_(0, index, grad_output)  # forgets the factor 2
        return grad, None, None
""")
    report = tmp_path / "report.json"
    result = run("--dynamic", "--no-cache", "--dynamic-report", str(report), "ops.py", cwd=tmp_path)
    assert "AGL901 Pick: gradcheck failed for input 0 (`x`)" in result.stdout, result.stdout + result.stderr
    (entry,) = json.loads(report.read_text())["functions"]
    assert entry["inputs"] == {"source": "declared", "detail": "config examples['ops.py:Pick'] #1",
                               "shapes": "(4, 3), (2,) int64, 'rows'"}


@pytest.mark.parametrize("setting, message", [
    ('device = "tpu"', "device must be one of cpu, cuda, auto; got 'tpu'"),
    ('examples = {Pick = [["tensor(4, x)"]]}', "cannot read 'tensor(4, x)' as a tensor spec"),
])
def test_bad_dynamic_config_is_one_line(tmp_path, setting, message):
    write(tmp_path / "pyproject.toml", f"[tool.autograd-lint.dynamic]\n{setting}\n")
    write(tmp_path / "ops.py")
    result = run("--dynamic", "ops.py", cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert_no_traceback(result)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message for a machine without a GPU")
def test_device_cuda_without_a_gpu_is_a_usage_error(tmp_path):
    write(tmp_path / "ops.py")
    result = run("--dynamic", "--device", "cuda", "ops.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == ("autograd-lint: error: --device cuda: no CUDA device is available "
                                     "(torch.cuda.is_available() is False)")


def test_bad_timeout_is_a_usage_error(tmp_path):
    result = run("--dynamic", "--dynamic-timeout", "0", ".", cwd=tmp_path)
    assert result.returncode == 2 and "expected a positive number of seconds, got '0'" in result.stderr


@pytest.mark.skipif(not os.environ.get("AUTOGRAD_LINT_SLOW"),
                    reason="runs every fixture module (minutes); set AUTOGRAD_LINT_SLOW=1")
def test_inputs_are_built_automatically_for_most_fixture_functions(tmp_path):
    report = tmp_path / "report.json"
    result = run("--dynamic", "--no-declared-examples", "--dynamic-timeout", "60", "--no-cache", "-q",
                 "--dynamic-report", str(report), "fixtures", timeout=1800)
    functions = json.loads(report.read_text())["functions"]
    built = [f for f in functions if f["inputs"]]
    assert not [f for f in built if f["inputs"]["source"] == "declared"]
    assert len(functions) > 500 and len(built) / len(functions) >= 0.80, result.stderr


def _plain_gradcheck_passes(module_path: Path, class_name: str, *shapes: tuple[int, ...]) -> None:
    """What the runtime check adds: gradcheck alone, on float64 inputs, finds nothing."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"plain_{class_name}", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    inputs = tuple(torch.randn(*shape, dtype=torch.float64, requires_grad=True) for shape in shapes)
    assert torch.autograd.gradcheck(getattr(module, class_name).apply, inputs)


def test_autocast_failures_are_errors_when_decorated_and_warnings_otherwise(fixture_run):
    _, findings, report = fixture_run
    failed = runtime(findings, "autocast.py", "AGL906")
    assert set(failed) == {"LinearUndecorated"}, failed
    undecorated = failed["LinearUndecorated"]
    assert undecorated["severity"] == "warning"
    assert "backward raised RuntimeError: expected m1 and m2 to have the same dtype" in undecorated["message"]
    assert "decorate forward with @torch.amp.custom_fwd" in undecorated["message"]
    # The lone @custom_fwd is an AGL603 finding, confirmed by the same run, which absorbs AGL906.
    (mismatch,) = [f for f in findings if f["path"].endswith("autocast.py") and f["code"] == "AGL603"]
    assert mismatch["confirmation"] == "confirmed", mismatch
    assert "backward lacks @torch.amp.custom_bwd" in mismatch["evidence"]
    assert "also fails AGL906 (merged into this finding)" in mismatch["evidence"]
    # Decorated for CUDA, both decorators: judged as on CUDA, where custom_bwd restores autocast.
    for name in ("LinearBothDecorated", "LinearCastInputs", "Elementwise"):
        assert "autocast" in function(report, name)["ran"], name
        assert not [f for f in findings if f["function_class"] == name and f["code"].startswith("AGL9")], name
    _plain_gradcheck_passes(DYNAMIC / "autocast.py", "LinearNoBackwardCast", (3, 4), (4, 5))
    _plain_gradcheck_passes(DYNAMIC / "autocast.py", "LinearUndecorated", (3, 4), (4, 5))


def test_the_amp_decorators_are_pointed_back_at_their_device_after_the_check():
    import importlib.util

    from autograd_lint.dynamic.autocast_check import autocast_failure

    spec = importlib.util.spec_from_file_location("autocast_fixture", DYNAMIC / "autocast.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls = module.LinearNoBackwardCast
    make = lambda: (torch.randn(3, 4, dtype=torch.float64, requires_grad=True),  # noqa: E731
                    torch.randn(4, 5, dtype=torch.float64, requires_grad=True))
    assert autocast_failure(cls, make).declares_autocast
    cells = dict(zip(cls.forward.__code__.co_freevars, cls.forward.__closure__))
    assert cells["device_type"].cell_contents == "cuda"


def test_undefined_gradients_are_caught_where_gradcheck_cannot_run(fixture_run):
    _, findings, report = fixture_run
    failed = runtime(findings, "undefined_grads.py", "AGL907")
    assert set(failed) == {"NoisySplit"}, failed
    message = failed["NoisySplit"]["message"]
    assert "backward raised TypeError: unsupported operand type(s) for +: 'Tensor' and 'NoneType' when only " \
           "output 0 is used: the gradient of output 1 is None" in message
    assert "gradcheck" not in function(report, "NoisySplit")["ran"]
    # Where AGL306 sees the bug and is confirmed, AGL907 is merged into it, and gradcheck (which
    # would fail with the same bare TypeError) is not run on top.
    static = [f for f in findings if f["path"].endswith("undefined_grads.py") and f["code"] == "AGL306"
              and f["function_class"] == "SplitScale"]
    assert static and all(f["confirmation"] == "confirmed" for f in static)
    assert any("also fails AGL907 (merged into this finding)" in f["evidence"] for f in static)
    assert "gradcheck" not in function(report, "SplitScale")["ran"]
    for name in ("SplitScaleChecked", "SplitScaleMaterialized"):
        assert "undefined gradients" in function(report, name)["ran"], name
        assert "gradcheck" in function(report, name)["ran"], name
        assert not [f for f in findings if f["function_class"] == name], name


def test_synthesized_shapes_give_each_dimension_its_own_size(fixture_run):
    """A swapped height and width is invisible on a square input: gradcheck passes it there."""
    _, findings, report = fixture_run
    wrong = runtime(findings, "swapped_axes.py", "AGL903")
    assert set(wrong) == {"RowMeanPool"}, wrong
    assert wrong["RowMeanPool"]["message"] == (
        "RowMeanPool: gradient for input 0 (`x`) has shape (2, 3, 4, 2), the input (2, 3, 2, 4) "
        "(the same sizes in another order: axes swapped)")  # rank 4: forward unpacks `n, c, h, w = x.shape`
    _plain_gradcheck_passes(DYNAMIC / "swapped_axes.py", "RowMeanPool", (2, 3, 4, 4))
    assert function(report, "RowMeanPoolRight")["inputs"]["shapes"] == "(2, 3, 2, 4)"
    # A forward that refuses every non-square plan still gets inputs: the square plans come last.
    assert function(report, "SquareOnly")["inputs"]["shapes"] == "(4, 4)"
    assert not [f for f in findings if f["function_class"] in ("RowMeanPoolRight", "SquareOnly")
                and f["code"].startswith("AGL9")]


def test_only_a_permuted_shape_counts_as_swapped_axes():
    from autograd_lint.dynamic.inputs import swapped_axes

    message = ("backward raised RuntimeError: Function FBackward returned an invalid gradient at index 0 - "
               "got [{}] but expected shape compatible with [2, 3, 4, 5]")
    assert swapped_axes(message.format("2, 3, 5, 4"))
    assert not swapped_axes(message.format("2, 3, 4, 5"))
    assert not swapped_axes(message.format("2, 3, 4"))
    assert not swapped_axes(message.format("6, 4, 5"))
    assert not swapped_axes("backward raised TypeError: unsupported operand")


def test_the_report_follows_its_published_schema(fixture_run):
    jsonschema = pytest.importorskip("jsonschema")
    _, _, report = fixture_run
    schema = json.loads((REPO_ROOT / "docs" / "dynamic-report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(report)
    # Module-level failures are entries like the others, and every status the run met is counted.
    statuses = [entry["status"] for entry in report["functions"]]
    assert {"checked", "no-inputs", "import-failed", "crashed", "exited", "not-defined"} <= set(statuses)
    assert report["summary"]["not_checked"] == {status: statuses.count(status) for status in STATUSES
                                                if status != "checked"}
    assert report["summary"]["checked"] == statuses.count("checked")


# A module of each way a child can end or answer (a finding, by design, an exit, an abort, a
# recursion, an import error, retried and structured inputs): the whole fixture set a second
# time, one interpreter per module, was the longest test of the suite (two minutes).
ONE_INTERPRETER_EACH = ("abort_in_middle.py", "by_design_kinds.py", "exit_in_middle.py", "import_error.py",
                        "recursion_in_middle.py", "retried_inputs.py", "undefined_grads.py", "wrong_formulas.py")


def test_the_fork_server_gives_the_same_answers_as_one_interpreter_per_module(fixture_run, tmp_path):
    """The fixture run went through the fork server; this one starts a fresh interpreter per
    module, for a module of each kind. Same findings, confirmations, evidence and per-class
    report entries (seconds aside) for those modules."""
    result, findings, report = fixture_run
    modules = [str((DYNAMIC / name).relative_to(REPO_ROOT)) for name in ONE_INTERPRETER_EACH]
    assert set(modules) <= set(fixture_modules())
    report_path = tmp_path / "report.json"
    without = run_cli("--dynamic", "--dynamic-timeout", str(WIDE_TIMEOUT), "--format", "json", "--no-cache",
                      "-j", "2", "--dynamic-report", str(report_path), *modules, cwd=REPO_ROOT,
                      timeout=1800, env={"AUTOGRAD_LINT_DYNAMIC_FORK_SERVER": "0"})
    assert without.returncode == 1, without.stderr

    def of_these(entries: list[dict]) -> list[dict]:
        return [entry for entry in entries if entry["path"] in modules]

    assert json.loads(without.stdout)["findings"] == of_these(findings)

    def timeless(entries: list[dict]) -> list[dict]:
        return [{key: value for key, value in entry.items() if not key.endswith("seconds")} for entry in entries]

    other = json.loads(report_path.read_text(encoding="utf-8"))
    assert timeless(other["functions"]) == timeless(of_these(report["functions"]))
    assert len(other["functions"]) > len(modules)

    def not_checked(stderr: str) -> list[str]:
        return [line for line in stderr.splitlines() if "not checked:" in line and any(m in line for m in modules)]

    assert not_checked(without.stderr) and not_checked(without.stderr) == not_checked(result.stderr)


def test_parameters_that_are_not_tensors_get_second_tries_from_forwards_errors(fixture_run):
    """A parameter named like a size is a tuple of ints, the first tensor's shape; one named like a
    callable (`fn`, `act_fn`) gets a small callable; a size with no such name, guessed as a tensor
    ("must be tuple of ints, not Tensor"), is retried as a tuple of ints; parameters that forward
    unpacks into a call (`*args`, `**kwargs`) are an empty tuple and an empty dict; one compared with
    strings is those strings, one tested on its own a flag."""
    _, findings, report = fixture_run
    details = {name: function(report, name)["inputs"]["detail"] for name in
               ("ReshapeTo", "AddFloor", "ApplyThen", "SoftenThen", "ScaleBy", "ApplyOp", "ReversibleCouple",
                "ScaleByMode", "ShiftBy")}
    assert details == {
        "ReshapeTo": "same (3, 4): x (3, 4), shape=(3, 4)",
        "AddFloor": "same (3, 4): x (3, 4), noise_shape=(3, 4)",
        "ApplyThen": "same (3, 4): x (3, 4), fn=identity",
        "SoftenThen": "same (3, 4): x (3, 4), act_fn=identity",
        "ScaleBy": "same (3, 4): x (3, 4), factors=(3, 4)",
        "ApplyOp": "same (3, 4): x (3, 4), op=identity, args=(), kwargs={}",  # op(x, *args, **kwargs)
        "ReversibleCouple": "same (3, 4): x (3, 4), fm=identity, gm=identity",  # forward calls both; no *params
        "ScaleByMode": "same (3, 4): x (3, 4), mode='double', halve=False",  # `mode == "double"`, `if halve`
        "ShiftBy": "same (3, 4): x (3, 4), amount=0.5",  # `amount: Optional[float]`
    }
    assert "gradcheck" in function(report, "ReversibleCouple")["ran"]
    for name in ("ReshapeTo", "AddFloor", "SoftenThen", "ScaleBy", "ApplyOp", "ScaleByMode", "ShiftBy"):
        assert {"gradcheck", "gradgradcheck"} <= set(function(report, name)["ran"]), name
    assert [f["function_class"] for f in findings if f["path"].endswith("non_tensor_arguments.py")] == ["ApplyThen"]
    wrong = runtime(findings, "non_tensor_arguments.py", "AGL901")
    assert set(wrong) == {"ApplyThen"} and "input 0 (`x`)" in wrong["ApplyThen"]["message"]


def test_last_dimensions_are_searched_per_input_and_after_a_rejected_gradient(fixture_run):
    """A quaternion (2, 4) acting on a point (2, 3), found from forward's errors (the point `p`
    first guessed as a float); the quaternion drawn unit, as the p-gradient's formula needs.
    ScaledProduct's first guess runs forward but not backward (a gradient of 5 columns for a
    (3, 4) input): the second tries still run, and find (2, 5) and (2, 4), where no AGL903 is due."""
    _, findings, report = fixture_run
    rotate = function(report, "RotatePoint")
    assert rotate["inputs"]["detail"] == "last dimensions 4, 3: q (2, 4), p (2, 3), q[..., 0:4] a unit quaternion"
    assert "gradcheck" in rotate["ran"]
    scaled = function(report, "ScaledProduct")
    assert scaled["inputs"]["shapes"] == "(2, 5), (2, 4)"
    assert {"raw backward", "gradcheck", "gradgradcheck"} <= set(scaled["ran"])
    assert not [f for f in findings if f["path"].endswith("coupled_sizes.py") and f["code"].startswith("AGL9")]


def test_inputs_whose_gradients_forward_refuses_are_passed_without_grad(fixture_run):
    """Forward raises when an input it names requires grad: those go without requires_grad and
    the checks judge the others (gradcheck, gradgradcheck and the messages name forward's own
    input numbers)."""
    _, findings, report = fixture_run
    assert function(report, "DecayByScale")["inputs"]["detail"] == "same (3, 4): x (3, 4) without grad, scale (3, 4)"
    kernel = function(report, "SquaredExponential")["inputs"]
    assert kernel["detail"] == ("lengthscale a column: x1 (3, 4) without grad, x2 (3, 4) without grad, "
                                "lengthscale (3, 1), sq_dist_func=squared difference")
    for name in ("DecayByScale", "SquaredExponential"):
        assert {"gradcheck", "gradgradcheck"} <= set(function(report, name)["ran"]), name
    wrong = {(f["function_class"], f["code"]) for f in findings
             if f["path"].endswith("refused_gradients.py") and f["code"].startswith("AGL9")}
    assert wrong == {("WrongDecayByScale", "AGL901"), ("SavedDecayByScale", "AGL902")}
    message = runtime(findings, "refused_gradients.py", "AGL901")["WrongDecayByScale"]["message"]
    assert "input 1 (`scale`)" in message and "`x`" not in message
    assert runtime(findings, "refused_gradients.py", "AGL902")["SavedDecayByScale"]["message"].startswith(
        "SavedDecayByScale: gradgradcheck failed: Jacobian mismatch for output 0 with respect to input 1 (`scale`)")


def test_gradients_different_by_design_are_agl908_not_agl901(fixture_run):
    """A straight-through estimator and gradient modifiers fail gradcheck by design: not errors.
    AGL908 is off by default, so the default run reports nothing for them; the report lists it."""
    _, findings, report = fixture_run
    by_design = {f["function_class"]: f for f in findings if f["path"].endswith("by_design.py")
                 and f["code"].startswith("AGL9")}
    assert {name: f["code"] for name, f in by_design.items()} == {
        "ScaledSin": "AGL901", "Float32SinWrong": "AGL901", "GuidedReLU": "AGL909", "ScaleDroppedCoordinate": "AGL901",
        "ScaleForgotWeight": "AGL901", "DoubleForgotFactor": "AGL901", "SO2LogPlusOffsetWrong": "AGL901"}
    partly = by_design["SO2LogPlusOffsetWrong"]["message"]
    assert partly.startswith("SO2LogPlusOffsetWrong: gradcheck failed for input 1 (`offset`): max |analytical - "
                             "numerical| = 1"), partly
    assert partly.endswith("; input 0 (`z`) differs by design (tangent-space gradient)"), partly
    for name in ("RoundSTE", "GradReverse", "StitchGradient", "ClipGradient", "SO2Log", "LogWithAveragedGradient",
                 "SpikeTimeEstimate", "NaturalGradientSin"):
        entry = function(report, name)
        assert entry["runtime_findings"] == ["AGL908"], (name, entry)
        assert "gradcheck" in entry["ran"] and "gradgradcheck" not in entry["ran"]
    # gradcheck passes this clipper (a one-hot 1 is not clipped); linearity fails, by design.
    assert function(report, "ClipGradientToOne")["runtime_findings"] == ["AGL908"]
    for name in ("RoundExact", "Identity", "SignGatedReLU"):
        assert {"gradcheck", "linearity", "gradgradcheck"} <= set(function(report, name)["ran"]), name
        assert function(report, name)["runtime_findings"] == [], name


def test_agl908_says_which_kind_when_selected(tmp_path):
    module = write(tmp_path / "ops.py", (DYNAMIC / "by_design.py").read_text())
    result = run("--dynamic", "--no-cache", "--format", "json", "--extend-select", "AGL908", str(module),
                 cwd=tmp_path)
    found = {f["function_class"]: f for f in json.loads(result.stdout)["findings"] if f["code"] == "AGL908"}
    assert set(found) == {"RoundSTE", "GradReverse", "StitchGradient", "ClipGradient", "ClipGradientToOne",
                          "SO2Log", "LogWithAveragedGradient", "SpikeTimeEstimate", "NaturalGradientSin"}, result.stdout
    assert all(f["severity"] == "info" for f in found.values())
    assert found["RoundSTE"]["message"].startswith(
        "RoundSTE: straight-through or surrogate estimator: forward is piecewise constant in input 0 (`x`)")
    assert 'its documentation says "Straight-through"' in found["RoundSTE"]["message"]
    assert found["GradReverse"]["message"].startswith(
        "GradReverse: gradient modifier: forward returns input 0 (`x`) unchanged and backward scales the "
        "gradient by -1")
    assert "backward reroutes a gradient to input 0 (`x1`), which forward does not read" in \
        found["StitchGradient"]["message"]
    assert found["SO2Log"]["message"].startswith(
        "SO2Log: tangent-space gradient: the gradient for input 0 (`z`) is always zero in the last coordinate of "
        "its last dimension: a gradient in the tangent space of a Lie group or manifold")
    assert "backward computes the gradient for input 0 (`x`) from input 1 (`running_mean`), which forward does " \
        "not read and which gets no gradient" in found["LogWithAveragedGradient"]["message"]
    assert "backward substitutes the constant -1 for the derivative in input 0 (`spikes`) (by design: its " \
        'documentation says "Linearize")' in found["SpikeTimeEstimate"]["message"]
    assert found["NaturalGradientSin"]["message"].startswith(
        "NaturalGradientSin: natural gradient: backward's Jacobian is forward's times one fixed symmetric positive "
        "semi-definite matrix that couples the inputs")
    # A gradient clipper is not linear, by design: its AGL909 is folded into AGL908.
    assert "backward is not linear in its gradient" in found["ClipGradient"]["message"]
    assert found["ClipGradientToOne"]["message"].startswith(
        "ClipGradientToOne: gradient modifier (forward returns an input unchanged): backward is not linear")


def test_a_backward_that_gates_on_the_gradients_sign_is_agl909(fixture_run):
    _, findings, report = fixture_run
    (guided,) = [f for f in findings if f["function_class"] == "GuidedReLU" and f["code"] == "AGL909"]
    assert guided["severity"] == "error" and guided["confirmation"] is None  # a runtime finding: no confirmation
    assert guided["evidence"].startswith("ran on ")
    difference = float(re.search(r"differs from 0.75\*backward\(g1\) \+ -1.25\*backward\(g2\) by up to "
                                 r"([0-9.e+-]+) in the gradient for input 0 \(`x`\)", guided["message"]).group(1))
    assert difference > 0.1
    # gradcheck (slow mode: one-hot, non-negative probes) passes it: this check is not gradcheck.
    _plain_gradcheck_passes(DYNAMIC / "by_design.py", "GuidedReLU", (3, 4))
    assert "gradcheck" in function(report, "GuidedReLU")["ran"]


def test_a_forward_that_casts_to_float32_is_not_agl903(fixture_run):
    _, findings, report = fixture_run
    entry = function(report, "Float32Sin")
    assert entry["runtime_findings"] == [] and "gradcheck" in entry["ran"], entry
    assert "gradgradcheck: forward computes in float32, below the precision second derivatives need" in \
        entry["skipped"]
    # Without a cast in forward, a float32 gradient still is one.
    assert "is float32, the input float64" in runtime(findings, "raw_backward.py", "AGL903")["Float32Grad"]["message"]


def test_nan_in_a_check_is_named_by_input_and_element(fixture_run):
    _, findings, report = fixture_run
    nan = runtime(findings, "nonfinite.py", "AGL901")
    assert set(nan) == {"NanBackward"}, nan
    assert re.search(r"NanBackward: gradcheck failed: backward returns nan in the gradient for input 0 \(`x`\) at "
                     r"element \(\d+, \d+\)", nan["NanBackward"]["message"]), nan["NanBackward"]["message"]
    edge = function(report, "Sqrt")
    assert edge["inputs"]["source"] == "declared"
    assert edge["runtime_findings"] == [] and "gradcheck" not in edge["ran"]
    assert "gradcheck: forward gives nan within 1e-06 of input 0 (`x`) at element (1, 1) (for output element 4): " \
        "the input is at the edge of forward's domain" in edge["skipped"], edge["skipped"]


def test_a_module_that_disables_grad_mode_at_import_is_checked_with_grad_on(fixture_run):
    _, findings, report = fixture_run
    assert not [f for f in findings if f["path"].endswith("grad_disabled_at_import.py")]
    assert {"gradcheck", "gradgradcheck"} <= set(function(report, "CubeGradOff")["ran"])


def test_classes_it_cannot_check_are_listed_with_why(fixture_run):
    """An abstract base is listed (not silently left out); classes of one module that all need a
    compiled extension that is not built share one line that says so."""
    result, _, report = fixture_run
    base = function(report, "_ScaleBase")
    assert (base["status"], base["reason"]) == (
        "not-run", "an abstract base: it defines no forward (its subclasses do, and are checked on their own)")
    assert "warning: --dynamic: fixtures/dynamic/unrunnable.py:8: _ScaleBase: not checked: an abstract base" \
        in result.stderr
    assert {"gradcheck", "gradgradcheck"} <= set(function(report, "Double")["ran"])
    missing = ("needs the compiled extension or optional module `autograd_lint_fixture_fused_ext`, which is not "
               "importable here (ModuleNotFoundError: No module named 'autograd_lint_fixture_fused_ext')")
    for name in ("FusedGelu", "FusedSilu"):
        assert (function(report, name)["status"], function(report, name)["reason"]) == ("no-inputs", missing)
    lines = [line for line in result.stderr.splitlines() if "unrunnable.py" in line]
    assert f"autograd-lint: warning: --dynamic: fixtures/dynamic/unrunnable.py: 2 Function classes not checked " \
        f"(FusedGelu, FusedSilu): {missing}" in lines, lines
    assert len(lines) == 2, lines


def test_an_abstract_base_does_not_fail_require_checked(tmp_path):
    module = write(tmp_path / "ops.py", "\n".join((DYNAMIC / "unrunnable.py").read_text().splitlines()[:23]) + "\n")
    result = run("--dynamic", "--no-cache", "--dynamic-require-checked", str(module), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "_ScaleBase: not checked: an abstract base" in result.stderr


def test_symmetric_matrix_ops_are_checked_on_structured_inputs(fixture_run):
    """A covariance, a Cholesky factor or a matrix its docstring calls symmetric is built with its
    structure, and gradcheck runs on f∘P (P onto the set): the correct ops pass, although plain
    gradcheck on general matrices fails them; their wrong twins stay AGL901 and say so."""
    _, findings, report = fixture_run
    details = {name: function(report, name)["inputs"]["detail"] for name in (
        "BilinearForm", "CholeskyLogDet", "LogDetOf", "TriangularSolve", "QuadFormDiagonal", "PredictiveVariance")}
    assert details == {
        "BilinearForm": "structured (n=4): covar (4, 4) spd, x (4, 5), y (4, 5)",
        "CholeskyLogDet": "structured (n=4): covar (4, 4) spd",
        "LogDetOf": "structured after forward's error (spd) (n=4): a (4, 4) spd",
        "TriangularSolve": "structured (n=4): chol (4, 4) lower-triangular, rhs (4, 5)",
        "QuadFormDiagonal": "structured (n=4): matrix (4, 4) symmetric, rhs (4, 5)",
        "PredictiveVariance": "structured (n=4): chol (4, 4) lower-triangular, cross (4, 5), middle (4, 4)",
    }
    for name in details:
        entry = function(report, name)
        assert entry["status"] == "checked" and entry["runtime_findings"] == [], (name, entry)
        assert {"gradcheck", "linearity", "gradgradcheck"} <= set(entry["ran"]), (name, entry)
    # `middle` is symmetric only by assumption (nothing but the Cholesky factor beside it says so):
    # checked on a symmetric one, and the report says why.
    (note,) = function(report, "PredictiveVariance")["skipped"]
    assert note.startswith("gradcheck on a general `middle`: it fails there and passes once `middle` is symmetric")
    # Nothing but forward's call of an eigensolver says `h` is symmetric: built SPD.
    spectral = function(report, "SpectralSqrt")
    assert spectral["inputs"]["detail"] == "structured (n=4): h (4, 4) spd" and spectral["runtime_findings"] == []
    wrong = runtime(findings, "symmetric_matrix.py", "AGL901")
    # Guessed general square matrices: a backward for symmetric ones fails, and is a warning only.
    square = wrong.pop("BatchSquare")
    assert square["severity"] == "warning" and "(not certain: gradcheck passes once the guessed square matrix `x` is " \
        "symmetric, so backward may be derived for symmetric inputs" in square["message"]
    assert wrong.pop("BatchSquareWrong")["severity"] == "error"  # wrong for symmetric matrices too
    assert set(wrong) == {"BilinearFormWrong", "CholeskyLogDetWrong"}
    assert "input 2 (`y`)" in wrong["BilinearFormWrong"]["message"]
    for finding in wrong.values():
        assert "(checked on the structured set: `covar` spd; gradcheck of forward composed with the projection" \
            in finding["message"] and finding["severity"] == "error"
    # What the projection changes: on general matrices, gradcheck fails the correct ops.
    module = load_module(DYNAMIC / "symmetric_matrix.py", "structured")
    generator = torch.Generator().manual_seed(0)
    base = torch.rand(4, 4, dtype=torch.float64, generator=generator)
    covar = (base @ base.mT + 4 * torch.eye(4, dtype=torch.float64)).requires_grad_()
    x, y = (torch.rand(4, 5, dtype=torch.float64, generator=generator, requires_grad=True) for _ in range(2))
    assert not torch.autograd.gradcheck(module.BilinearForm.apply, (covar, x, y), raise_exception=False)
    assert not torch.autograd.gradcheck(module.CholeskyLogDet.apply, (covar,), raise_exception=False)


def test_a_declared_example_can_ask_for_a_structure(tmp_path):
    """``tensor(4, 4, structure="spd")`` in a declared example (here the config's) builds an SPD
    matrix and checks along that set; a structure on a non-square shape is refused in one line."""
    write(tmp_path / "pyproject.toml", """\
[tool.autograd-lint.dynamic.examples]
"ops.py:Whiten" = [["tensor(2, 4, 4, structure='spd')", "tensor(2, 4, 3)"]]
""")
    write(tmp_path / "ops.py", """\
import torch


class Whiten(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        chol = torch.linalg.cholesky(a)
        ctx.save_for_backward(a, b)
        return torch.cholesky_solve(b, chol)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        chol = torch.linalg.cholesky(a)
        grad_b = torch.cholesky_solve(grad, chol)
        grad_a = -grad_b @ torch.cholesky_solve(b, chol).mT
        return (grad_a + grad_a.mT) / 2, grad_b
""")
    report = tmp_path / "report.json"
    result = run("--dynamic", "--no-cache", "--format", "json", "--dynamic-report", str(report), "ops.py",
                 cwd=tmp_path)
    (entry,) = json.loads(report.read_text())["functions"]
    assert entry["status"] == "checked" and entry["inputs"]["shapes"] == "(2, 4, 4), (2, 4, 3)", entry
    assert entry["runtime_findings"] == [] and "gradgradcheck" in entry["ran"], result.stdout + result.stderr
    assert torch.linalg.eigvalsh(_materialized("tensor(2, 4, 4, structure='spd')")).min() > 0
    write(tmp_path / "pyproject.toml", """\
[tool.autograd-lint.dynamic.examples]
"ops.py:Whiten" = [["tensor(4, 3, structure='spd')", "tensor(4, 3)"]]
""")
    refused = run("--dynamic", "--no-cache", "ops.py", cwd=tmp_path)
    assert refused.returncode == 2 and "a structure needs a floating tensor whose last two sizes are equal" \
        in refused.stderr, refused.stderr


def _materialized(text: str):
    from autograd_lint.dynamic.inputs import materialize
    from autograd_lint.dynamic.settings import parse_tensor_spec

    return materialize(parse_tensor_spec(text, "test"))


def test_a_parameter_object_argument_is_closed_over_for_gradcheck(fixture_run):
    """torch's gradcheck cannot take a NamedTuple argument (it rebuilds it from a map): without
    closing it over, a correct Function got "gradcheck raised TypeError ... 'map'" (AGL901)."""
    _, findings, report = fixture_run
    entry = function(report, "Decay")
    assert "p=DecayParameters(" in entry["inputs"]["detail"], entry
    assert {"gradcheck", "gradgradcheck"} <= set(entry["ran"]) and entry["runtime_findings"] == [], entry
    assert not [f for f in findings if f["path"].endswith("parameter_objects.py")]


def test_every_class_the_static_scan_finds_is_in_the_report(fixture_run):
    """Nested in a function, under an `if`, two of one name: each has its own entry (name and
    line), and those the import did not define say where they sit."""
    result, findings, report = fixture_run
    entries = [(entry["function_class"], entry["line"], entry["status"], entry["reason"])
               for entry in report["functions"] if entry["path"].endswith("hidden_classes.py")]
    assert entries == [
        ("Scale", 23, "not-defined",
         "not defined at import: under `if HAS_TRITON:`, a condition that was false at import"),
        ("Scale", 34, "checked", ""),
        ("make_local_cube.<locals>.LocalCube", 45, "checked", ""),
        ("make_square.<locals>.Square", 60, "checked", ""),
        ("Negate", 78, "checked", ""),
        ("Learner.build.<locals>.Surrogate", 91, "checked", ""),
        ("make_scaled.<locals>.Scaled", 105, "checked", ""),
        ("make_wrong_cube.<locals>.WrongCube", 118, "checked", ""),
        ("leaky_step.<locals>.LeakyStep", 136, "checked", ""),
        ("make_wrong_scale.<locals>.WrongScale", 149, "checked", ""),
        ("make_clamped.<locals>.Clamped", 164, "checked", ""),
        ("soft_sign.<locals>.SoftSign", 179, "checked", ""),
        ("widened.<locals>.Widened", 196, "not-defined",
         "not defined at import: inside `widened()`, which the import did not call; its code reads `width` of "
         "`widened()`, and no call of it (or of a function of the package that calls it) with guessed arguments "
         "reached the class"),
    ], entries
    # The wrong one of the two `Scale`s is the one reported, on its own line; and the wrong classes
    # of uncalled functions, defined from their source.
    assert [(f["line"], f["code"]) for f in findings if f["path"].endswith("hidden_classes.py")] == [
        (34, "AGL901"), (118, "AGL901"), (149, "AGL901")]
    assert ("warning: --dynamic: fixtures/dynamic/hidden_classes.py:196: widened.<locals>.Widened: "
            "not checked: not defined at import: inside `widened()`") in result.stderr


def test_a_class_of_an_uncalled_function_is_defined_from_its_source(fixture_run):
    """Where a class inside a function the import did not call reads no name of that function,
    its statement run in the module's namespace makes the same class: it is checked, and its
    inputs say how it was defined."""
    _, findings, report = fixture_run
    entry = function(report, "make_local_cube.<locals>.LocalCube")
    assert {"gradcheck", "gradgradcheck"} <= set(entry["ran"]) and entry["runtime_findings"] == [], entry
    assert ("defined from its source: `make_local_cube()`, which holds it, was not called, and the class "
            "reads no name of it") in entry["inputs"]["detail"], entry
    (wrong,) = [f for f in findings if f["path"].endswith("hidden_classes.py") and f["line"] == 118]
    assert "defined from its source: `make_wrong_cube()`" in wrong["evidence"], wrong


def test_a_factory_class_reading_parameters_with_defaults_sees_the_defaults(fixture_run):
    """A class that reads only its factory's parameters, each with a constant default the factory
    never reassigns, is defined with those values: the right one passes, the wrong one is an
    AGL901 error whose evidence names the values; a reassigned parameter keeps it undefined."""
    _, findings, report = fixture_run
    right = function(report, "leaky_step.<locals>.LeakyStep")
    assert {"gradcheck", "gradgradcheck"} <= set(right["ran"]) and right["runtime_findings"] == [], right
    assert "their defaults (`offset=0.001`, `slope=0.5`)" in right["inputs"]["detail"], right
    (wrong,) = [f for f in findings if f["path"].endswith("hidden_classes.py") and f["line"] == 149]
    assert wrong["code"] == "AGL901" and wrong["severity"] == "error", wrong
    assert "their defaults (`factor=3.0`)" in wrong["evidence"], wrong
    assert "made by calling make_clamped() with limit=1.0" in \
        function(report, "make_clamped.<locals>.Clamped")["inputs"]["detail"]


def test_a_class_reading_its_functions_locals_is_made_by_calling_that_function(fixture_run):
    """A class that reads a local of its function exists only once the function runs: it is called
    with guessed arguments, the class statement's run is noticed, and the arguments its `apply`
    got there are the first candidate."""
    _, _, report = fixture_run
    soft_sign = function(report, "soft_sign.<locals>.SoftSign")
    assert {"gradcheck", "gradgradcheck"} <= set(soft_sign["ran"]) and soft_sign["runtime_findings"] == [], soft_sign
    assert soft_sign["inputs"]["detail"].startswith("through soft_sign(), same (3, 4): x (3, 4)"), soft_sign
    assert "made by calling soft_sign() with same (3, 4): x (3, 4), temperature=0.5" in soft_sign["inputs"]["detail"]
    scaled = function(report, "make_scaled.<locals>.Scaled")
    assert "made by calling make_scaled() with factor=0.5, since the class reads its names" in \
        scaled["inputs"]["detail"], scaled


def test_complex_gradients_for_real_guesses_are_checked_on_complex_inputs(fixture_run):
    """Backward returns complex gradients for the guessed real inputs (autograd raises): the same
    guess made complex is checked; the right class passes; a wrong one that is wrong for real
    values made complex too is an error, one right for them is a warning only."""
    _, findings, report = fixture_run
    right = function(report, "ExpOfImaginary")
    assert right["status"] == "checked" and right["runtime_findings"] == [], right
    assert "real tensors made complex" in right["inputs"]["detail"], right
    failed = runtime(findings, "complex_gradients.py", "AGL901")
    assert {name: failed[name]["severity"] for name in failed} == {
        "ExpOfImaginaryNoConjugate": "error", "ConjugateNoConjugate": "warning"}, failed
    assert "it fails as well on the real values made complex inside forward's call" in \
        failed["ExpOfImaginaryNoConjugate"]["message"]
    assert "not certain: backward returned complex gradients for the guessed real inputs" in \
        failed["ConjugateNoConjugate"]["message"]


def test_a_forward_that_calls_exit_reads_as_one(fixture_run):
    result, _, report = fixture_run
    (entry,) = [entry for entry in report["functions"]
                if entry["path"].endswith("exit_in_middle.py") and entry["function_class"] == "B"]
    assert entry["status"] == "exited", entry
    assert entry["reason"].startswith("its code called exit() or sys.exit() while its inputs were built"), entry
    assert "SystemExit: None" not in result.stderr


def test_an_exactly_linear_float32_backward_is_not_agl909(fixture_run):
    """A float32 forward's gradient is float32: backward's linearity is judged at float32's
    precision even when it hands back float64 (differences near 1e-7 were an AGL909)."""
    _, findings, report = fixture_run
    entry = function(report, "Float32Affine")
    assert (entry["status"], entry["runtime_findings"]) == ("checked", []), entry
    assert "linearity" in entry["ran"], entry
    assert not [f for f in findings if f["function_class"] == "Float32Affine"]


def test_checked_means_gradcheck_ran(fixture_run):
    """A class on which only some checks ran is "partly-checked", counted apart in the summary."""
    result, _, report = fixture_run
    assert all("gradcheck" in entry["ran"] for entry in report["functions"] if entry["status"] == "checked")
    partly = [entry for entry in report["functions"] if entry["status"] == "partly-checked"]
    assert partly and all(entry["ran"] and "gradcheck" not in entry["ran"] and entry["reason"] for entry in partly)
    assert f"{len(partly)} only partly checked (no gradcheck; listed above)" in result.stderr


def test_second_tries_and_plain_numbers_reach_every_class_without_false_errors(fixture_run):
    # Issue 29: a float that save_for_backward rejects, a tensor read with .item(), a fixed operator
    # guessed as a tensor, a hyper-parameter named like one, a domain the docstring states, a number
    # of time steps, a call site's literal. Before: 2 classes without inputs, 3 false AGL901
    # (`operator`, `keep_prob`, `bound_tensor`) and a false AGL903 (beta outside its domain).
    _, findings, report = fixture_run
    entries = {name: function(report, name) for name in (
        "ScaleSaved", "ScaleSavedWrong", "ThresholdItem", "ProjectOperator", "DropScaled", "Softplus",
        "SpikeTrain", "ScaledByCallSite", "PaddedFilter", "PaddedFilterWrong", "ComplexModulus", "Padded")}
    assert {name: entry["status"] for name, entry in entries.items()} == dict.fromkeys(entries, "checked")
    detail = {name: entry["inputs"]["detail"] for name, entry in entries.items()}
    assert "scale () without grad = 0.5" in detail["ScaleSaved"]
    assert "bound_tensor (1,) without grad" in detail["ThresholdItem"]
    assert "operator without grad: backward gives no gradient for it" in detail["ProjectOperator"]
    assert "keep_prob=0.5" in detail["DropScaled"]
    assert "beta=1.5" in detail["Softplus"]
    assert "x_seq (3, 4), T=3 (the leading size)" in detail["SpikeTrain"]
    assert "gain=3.0" in detail["ScaledByCallSite"]
    assert "mode=2, flip=False (kernel without grad" in detail["PaddedFilter"]  # docstring type, truth test
    assert "z (3, 2)" in detail["ComplexModulus"]  # only z[..., 0] and z[..., 1] are read
    assert "mode='reflect'" in detail["Padded"]  # the public wrapper's default
    found = {(f["function_class"], f["code"], f["severity"]) for f in findings if f["path"].endswith("retried_inputs.py")}
    # The retry reaches a real bug too; a bug judged on a guessed constant (`kernel`) is a warning
    # that says so. Nothing false.
    assert found == {("ScaleSavedWrong", "AGL901", "error"), ("PaddedFilterWrong", "AGL901", "warning")}
    uncertain = next(f for f in findings if f["function_class"] == "PaddedFilterWrong")
    assert "(not certain: `kernel` was guessed as a tensor that backward gives no gradient" in uncertain["message"]


def test_apply_arguments_that_no_guess_can_be_are_captured_from_the_package_s_callers(fixture_run):
    # fixtures/dynamic/through_callers.py: a plan object, the calling module, an operator object
    # behind a private helper: no guess of apply's own arguments runs, the callers' ones do.
    _, findings, report = fixture_run
    details = {name: function(report, name)["inputs"]["detail"]
               for name in ("PlannedScale", "PlannedScaleWrong", "_Gated", "_Blend", "_Spectral")}
    assert details["PlannedScale"].startswith("through planned_scale(), ")
    assert details["_Gated"].startswith("through Gate().forward(), ")  # built with width=4, its default sharpness
    assert details["_Blend"].startswith("through Blend().forward(), ")  # k=2, and apply called through an alias
    assert details["_Spectral"].startswith("through expm(), structured (n=4): a (4, 4) symmetric")  # the docstring's words
    for name in details:
        assert function(report, name)["status"] == "checked" and "gradcheck" in function(report, name)["ran"]
    assert function(report, "PlannedScale")["inputs"]["shapes"] == "(3, 4), a _Plan"  # no address: stable text
    wrong = runtime(findings, "through_callers.py", "AGL901")
    assert set(wrong) == {"PlannedScaleWrong"} and wrong["PlannedScaleWrong"]["severity"] == "error"
    # The captured matrix is symmetric: gradcheck stays on the symmetric set, where the
    # symmetrized backward is right (off it, a false AGL901). once_differentiable under
    # custom_bwd is seen: no gradgradcheck.
    assert not [f for f in findings if f["path"].endswith("through_callers.py") and f["function_class"] != "PlannedScaleWrong"]


def test_objects_of_the_package_s_classes_are_built_from_their_constructors(fixture_run):
    # fixtures/dynamic/built_objects.py: a parameter annotated with a settings dataclass, a mode
    # Enum (as text), an abstract operator; a caller that is a plain class's method.
    _, findings, report = fixture_run
    names = ("Powered", "PoweredWrong", "ByMode", "Applied", "_Migration", "_MigrationWrong")
    for name in names:
        assert function(report, name)["status"] == "checked" and "gradcheck" in function(report, name)["ran"], name
    shapes = {name: function(report, name)["inputs"]["shapes"] for name in names}
    assert shapes["Powered"].endswith("Settings(gain=1.5, power=2)")  # the dataclass's own defaults
    assert shapes["ByMode"].endswith("<Mode.DOUBLE: 2>")  # the Enum's first member
    assert shapes["Applied"].endswith("a Diagonal")  # the abstract class's first subclass that builds
    assert function(report, "_Migration")["inputs"]["detail"].startswith("through MigrationOperator().migrate(), ")
    wrong = runtime(findings, "built_objects.py", "AGL901")
    assert set(wrong) == {"PoweredWrong", "_MigrationWrong"}
    assert {entry["severity"] for entry in wrong.values()} == {"error"}
    assert not [f for f in findings if f["path"].endswith("built_objects.py")
                and f["function_class"] not in ("PoweredWrong", "_MigrationWrong")]
    # An object that needs another object (a model) is not made up: the class is not checked, and
    # the reason names the class that could not be built.
    needy = function(report, "NeedsNetwork")
    assert needy["status"] == "no-inputs" and "no Network could be built from its constructor" in needy["reason"]


def test_iterative_forwards_get_stand_in_functions_and_are_judged_once_they_settle(fixture_run):
    # fixtures/dynamic/iterative_solvers.py: `func: Callable[[Tensor, Tensor], Tensor]` is a
    # callable (it names tensors); a fixed point's f(z, x) must depend on x (the mixing stand-in);
    # two guessed iterations do not settle, sixty do.
    _, findings, report = fixture_run
    fixed, inverse = function(report, "FixedPoint"), function(report, "Inverse")
    assert fixed["inputs"]["detail"] == "same (3, 4): func=tanh mixing, x (3, 4), max_iter=2, tol=0.5"
    assert "gradcheck with the iterations left to settle (max_iter=60, tol=1e-12)" in fixed["ran"]
    assert inverse["inputs"]["detail"] == "same (3, 4): f=identity, y (3, 4), n=2"  # n counts a `range(n)` loop
    assert "gradcheck with the iterations left to settle (n=60)" in inverse["ran"]
    for entry in (fixed, inverse):
        assert entry["status"] == "checked" and entry["runtime_findings"] == []
    # Unsettled, the bisection's output steps: no straight-through label for it either (AGL908 is
    # off by default, so the report's own list is what shows it).
    assert "AGL908" not in inverse["runtime_findings"]
    newton = function(report, "NewtonSquareRoot")  # no function given: `n` alone, a `range(n)` count
    assert "gradcheck with the iterations left to settle (n=60)" in newton["ran"] and newton["runtime_findings"] == []
    wrong = runtime(findings, "iterative_solvers.py", "AGL901")
    assert {name: entry["severity"] for name, entry in wrong.items()} == {
        "FixedPointWrong": "warning", "NewtonSquareRootWrong": "error"}  # a stand-in `func`: a warning
    assert not [f for f in findings if f["path"].endswith("iterative_solvers.py") and f["function_class"] not in wrong]


def test_segment_lengths_and_edge_lists_index_the_first_tensor_s_rows(fixture_run):
    # fixtures/dynamic/segments.py: `lengths` over x's 3 rows, summing to 3, one per row of g too.
    _, findings, report = fixture_run
    for name, first in (("SegmentTotal", "x"), ("SegmentTotalWrong", "x"), ("SegmentSpread", "g")):
        entry = function(report, name)
        assert entry["status"] == "checked" and "gradcheck" in entry["ran"], name
        assert entry["inputs"]["detail"] == f"same (3, 4): {first} (3, 4), lengths=[2, 1, 0]"
    for name in ("MessagePassing", "MessagePassingWrong"):  # `edge_index`: a (2, E) edge list of x's rows
        entry = function(report, name)
        assert entry["status"] == "checked" and "gradcheck" in entry["ran"], name
        assert entry["inputs"]["detail"] == "same (3, 4): x (3, 4), edge_index (2, 6) int64 (edges between the 3 rows)"
    assert function(report, "GatherRows")["inputs"]["detail"] == "same (3, 4): x (3, 4), row_index (3,) int64"
    wrong = runtime(findings, "segments.py", "AGL901")
    assert set(wrong) == {"SegmentTotalWrong", "MessagePassingWrong", "GatherRowsWrong"}
    assert {entry["severity"] for entry in wrong.values()} == {"error"}
    assert not [f for f in findings if f["path"].endswith("segments.py") and f["function_class"] not in wrong]


def test_a_failure_on_guesses_that_the_package_s_own_inputs_pass_is_a_warning(fixture_run):
    # fixtures/dynamic/padded_inputs.py: backward right only on the zero-padded `u` its caller passes.
    _, findings, report = fixture_run
    for name, caller in (("PaddedProduct", "padded_product()"), ("PaddedProductWrong", "padded_product_wrong()")):
        assert f"gradcheck on what the package passes ({caller})" in function(report, name)["ran"]
    found = {(f["function_class"], f["code"], f["severity"]) for f in findings if f["path"].endswith("padded_inputs.py")}
    assert found == {("PaddedProduct", "AGL901", "warning"), ("PaddedProductWrong", "AGL901", "error")}
    warning = next(f for f in findings if f["function_class"] == "PaddedProduct")
    assert "(not certain: on what the package itself passes (padded_product()) gradcheck does not fail" in warning["message"]


def test_a_failure_on_a_stand_in_callable_is_a_warning_and_no_gradient_modifier(fixture_run):
    # fixtures/dynamic/stand_in_callables.py: `square` called in forward gets the identity.
    _, findings, report = fixture_run
    assert function(report, "SquaredThrough")["inputs"]["detail"] == "same (3, 4): x (3, 4), square=identity"
    assert function(report, "SquaredThrough")["runtime_findings"] == ["AGL901"]  # not AGL908
    found = {(f["function_class"], f["code"], f["severity"]) for f in findings
             if f["path"].endswith("stand_in_callables.py")}
    assert found == {("SquaredThrough", "AGL901", "warning"), ("SquaredWrong", "AGL901", "error")}
    warning = next(f for f in findings if f["function_class"] == "SquaredThrough")
    assert "(not certain: a stand-in callable was passed for `square`=identity" in warning["message"]


def test_the_packages_docstring_examples_build_what_no_guess_can(fixture_run):
    # fixtures/dynamic/documented_examples.py: a residual function, a rule object; the `>>>`
    # lines of the public function's (or the class's) docstring reach apply.
    _, findings, report = fixture_run
    inputs = {name: function(report, name)["inputs"] for name in ("ImplicitRoot", "ImplicitRootWrong", "Shrink")}
    assert (inputs["ImplicitRoot"]["source"], inputs["ImplicitRoot"]["detail"]) == (
        "call-site", "the docstring example of implicit_root()")  # it makes `p` require grad: the authors' call
    assert (inputs["Shrink"]["source"], inputs["Shrink"]["detail"]) == (
        "synthesized", "from the docstring example of Shrink")  # forward only: grad is a guess
    for name in inputs:
        assert function(report, name)["status"] == "checked" and "gradcheck" in function(report, name)["ran"]
    wrong = runtime(findings, "documented_examples.py", "AGL901")
    assert set(wrong) == {"ImplicitRootWrong"} and wrong["ImplicitRootWrong"]["severity"] == "error"
    assert not [f for f in findings if f["path"].endswith("documented_examples.py")
                and f["function_class"] != "ImplicitRootWrong"]


def test_a_failure_within_forwards_precision_or_an_eigenvector_phase_is_a_warning(fixture_run):
    # fixtures/dynamic/precision_limits.py: float32 values in a float64 output, a slope kept in 8
    # fractional bits (both pass gradcheck at 2% with wide steps); eigenvectors of `eig`, checked
    # on |v|^2: the right one passes, a wrong one fails.
    _, findings, report = fixture_run
    failed = runtime(findings, "precision_limits.py", "AGL901")
    assert {name: failed[name]["severity"] for name in failed} == {
        "RoundedInside": "warning", "QuantizedSlope": "warning", "EigenvectorsWrong": "error",
        "RoundedInsideWrong": "error"}
    assert "(within 2%: gradcheck passes with steps of 0.001 and a 2% tolerance" in failed["RoundedInside"]["message"]
    assert "within 2%" not in failed["RoundedInsideWrong"]["message"]  # a wrong factor misses at 2% too
    assert ("gradcheck fails on |v|^2 of the eigenvectors forward returns, a function that does not depend on the "
            "phase `eig` leaves free, so the gradient itself is wrong") in failed["EigenvectorsWrong"]["message"], \
        failed["EigenvectorsWrong"]
    right = function(report, "Eigenvectors")
    assert right["runtime_findings"] == [] and "gradcheck" in right["ran"], right
    assert any("on |v|^2 of them, which does not depend on the phase, it passes" in note
               for note in right["skipped"]), right


def test_a_mismatch_only_where_forward_ignores_the_input_is_a_warning(fixture_run):
    _, findings, _ = fixture_run
    failed = runtime(findings, "ignored_elements.py", "AGL901")
    assert failed["PaddedTail"]["severity"] == "warning"
    assert "(not certain: gradcheck disagrees only on elements of `x` that forward ignores, changing them changes " \
           "nothing" in failed["PaddedTail"]["message"]
    assert failed["ReluWithoutMask"]["severity"] == "error"  # flat where negative, but a large change is seen


def test_a_mismatch_the_class_documents_is_a_warning_that_quotes_it(fixture_run):
    _, findings, _ = fixture_run
    failed = runtime(findings, "documented_mismatch.py", "AGL901")
    assert failed["SmoothedFloor"]["severity"] == "warning"
    assert 'the class documents it: "For training this mismatch is correct by design: the smooth gradient is ' \
           'the useful one."' in failed["SmoothedFloor"]["message"]
    assert failed["SilentlySmoothedFloor"]["severity"] == "error"
    assert failed["NaturalMean"]["severity"] == "warning"  # "natural gradient": not the derivative, by definition
    assert 'the class documents it: "Its gradient is with respect to the mean, rather than the natural parameter: ' \
           'the natural gradient, for natural gradient descent."' in failed["NaturalMean"]["message"]
    assert failed["MeanFromNaturalParameter"]["severity"] == "error"  # natural parameters, no natural gradient


def test_an_input_documented_as_a_distribution_is_one(fixture_run):
    """fixtures/dynamic/distributions.py: Sinkhorn iterations need marginals that sum to one, and
    the gradient for one is a dual potential, defined up to a constant: on plain guesses a correct
    backward fails. Documented as distributions, they are built so and judged along the simplex;
    the twin whose cost gradient is twice the plan stays an error there."""
    _, findings, report = fixture_run
    right = function(report, "SinkhornCost")
    assert "a (4,) distribution, b (4,) distribution" in right["inputs"]["detail"], right
    assert "gradcheck" in right["ran"] and right["runtime_findings"] == [], right
    wrong = runtime(findings, "distributions.py", "AGL901")
    assert {name: wrong[name]["severity"] for name in wrong} == {
        "SinkhornCostWrong": "error", "SinkhornUntilSettled": "warning"}, wrong
    assert "gradcheck failed for input 2 (`cost`)" in wrong["SinkhornCostWrong"]["message"]
    # only the guessed `epsilon` is set to 1.0: `tol`, forward's own default, is kept (at 1.0 the
    # iterations would stop at once and the failure stay)
    assert "with the guessed numbers `epsilon` all 1.0 gradcheck passes" in \
        wrong["SinkhornUntilSettled"]["message"], wrong


def test_a_second_derivative_written_for_the_gpu_alone_is_not_an_error_on_the_cpu(fixture_run):
    """fixtures/dynamic/cuda_only_backward.py: the double backward asserts CUDA tensors, so on the
    CPU gradgradcheck is skipped and says why; an assert that fails on every device stays AGL902."""
    _, findings, report = fixture_run
    on_gpu = function(report, "SquareOnGpu")
    assert on_gpu["runtime_findings"] == [] and "gradgradcheck" not in on_gpu["ran"], on_gpu
    assert ("gradgradcheck: the second derivative's code asserts CUDA tensors (`assert grad.is_cuda and "
            "x.is_cuda`), and this run is on the CPU") in on_gpu["skipped"], on_gpu
    failed = runtime(findings, "cuda_only_backward.py", "AGL902")
    assert set(failed) == {"SquareAssertingRank"} and failed["SquareAssertingRank"]["severity"] == "error"
