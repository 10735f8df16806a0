"""Runtime confirmation of static findings (``autograd_lint.dynamic.confirm``), on real torch.

For every code in CONFIRMABLE_CODES, ``fixtures/dynamic/confirm/`` holds ``<CODE>_confirmed.py``
(the static finding is real at runtime) and ``<CODE>_near_miss.py`` (the rule flags it, or nearly
does, but it is harmless). The real CLI lints each fixture; the fixture is imported, its declared
``@example`` is turned into inputs the way ``--dynamic`` does it (``dynamic.inputs``), and each
finding goes through ``confirm_finding``. A near miss the rule does not flag is probed with the
module's ``PROBE_FINDING`` (the finding the rule would give), so it is exercised all the same.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from autograd_lint.catalogue import RULES  # noqa: E402
from autograd_lint.dynamic.confirm import CONFIRMABLE_CODES, confirm_finding  # noqa: E402
from autograd_lint.dynamic.inputs import declared_candidates, make_inputs_factory  # noqa: E402
from conftest import REPO_ROOT, class_of, function_classes, load_module, run_cli  # noqa: E402

FIXTURES = REPO_ROOT / "fixtures" / "dynamic" / "confirm"
CODES = sorted(CONFIRMABLE_CODES)


@functools.lru_cache(maxsize=1)
def _findings_by_file() -> dict[str, list[dict]]:
    """One run of the real CLI over the fixture directory, as a user types it."""
    process = run_cli("--format", "json", "--select", "ALL", "--no-cache",
                      str(FIXTURES.relative_to(REPO_ROOT)), cwd=REPO_ROOT)
    assert process.returncode in (0, 1), process.stderr
    by_file: dict[str, list[dict]] = {}
    for finding in json.loads(process.stdout)["findings"]:
        by_file.setdefault(Path(finding["path"]).name, []).append(finding)
    return by_file


def lint(path: Path) -> list[dict]:
    return _findings_by_file().get(path.name, [])






def inputs_for(cls: type, module, path: Path):
    """The class's first declared example, built exactly as the --dynamic child builds it."""
    candidate = next(declared_candidates(cls, module, {}, str(path)))
    return make_inputs_factory(candidate.recipe, "cpu")




def assert_informative(evidence: str) -> None:
    assert isinstance(evidence, str) and len(evidence) >= 20, evidence
    assert "\n" not in evidence


def test_every_confirmable_code_is_a_static_rule_with_both_fixtures():
    for code in CODES:
        assert RULES[code].static, code
        assert (FIXTURES / f"{code}_confirmed.py").is_file(), code
        assert (FIXTURES / f"{code}_near_miss.py").is_file(), code


def test_every_error_rule_but_the_parse_error_is_confirmable():
    errors = {code for code, info in RULES.items() if info.static and info.severity == "error"}
    assert errors - CONFIRMABLE_CODES == {"AGL000"}


@pytest.mark.parametrize("code", CODES)
def test_the_confirmed_fixture_is_confirmed(code: str):
    path = FIXTURES / f"{code}_confirmed.py"
    findings = [f for f in lint(path) if f["code"] == code]
    assert findings, f"the static rule must flag {path.name}"
    module = load_module(path, "confirm_fixture")
    for finding in findings:
        cls = class_of(finding, module)
        confirmation, evidence = confirm_finding(cls, inputs_for(cls, module, path), finding)
        assert confirmation == "confirmed", (finding["line"], evidence)
        assert_informative(evidence)


@pytest.mark.parametrize("code", CODES)
def test_the_near_miss_is_not_reproduced(code: str):
    path = FIXTURES / f"{code}_near_miss.py"
    module = load_module(path, "confirm_fixture")
    findings = [f for f in lint(path) if f["code"] == code]
    if not findings:
        (cls,) = function_classes(module)
        findings = [{"code": code, "function_class": cls.__name__, "line": 1, "column": 1,
                     **module.PROBE_FINDING}]
    for finding in findings:
        cls = class_of(finding, module)
        confirmation, evidence = confirm_finding(cls, inputs_for(cls, module, path), finding)
        assert confirmation == "not-reproduced", (finding["line"], evidence)
        assert_informative(evidence)


# --- the evidence says what happened --------------------------------------------------------

EVIDENCE = {
    "AGL101": r"returned an incorrect number of gradients \(expected 2, got 1\).*1 value\(s\) for 2",
    "AGL102": r"TypeError: .*backward\(\) takes 2 positional arguments but 3 were given.*2 output",
    "AGL104": r"DeprecationWarning: .*should not be instantiated.*Legacy autograd function",
    "AGL105": r"NotImplementedError: You must implement either the backward or vjp",
    "AGL106": r"TypeError: missing a required argument: .x.",
    "AGL107": r"returned \(None\) although needs_input_grad=\(True,\)",
    "AGL108": r"input 0 \(Tensor \(4, 5\) float64\) is the same when grad_output is doubled",
    "AGL202": r"save_for_backward can only save variables, but argument 1 is of type int",
    "AGL203": r"ctx.saved_tensors was read during forward/setup_context and gave tuple \(\)",
    "AGL204": r"called 2 times in one apply \(with 1, then 1 value",
    "AGL205": r"ValueError: too many values to unpack.*\(2 tensor\(s\) saved\)",
    "AGL206": r"AttributeError: .*'scale'",
    "AGL301": r"grad_output 0 changed in place by backward \(version 0 -> 1",
    "AGL302": r"saved tensor 0 \(input 0\) changed in place by backward \(version 0 -> 1",
    "AGL303": r"input 0 changed in place by forward without mark_dirty \(version 0 -> 1",
    "AGL305": r"gradgradcheck failed: GradcheckError",
    "AGL307": r"output 0 is a view of an input; output.add_\(0\) raised RuntimeError: Output 0 of GradReverse "
              r"is a view and is being modified inplace. This view was created inside a custom Function",
    "AGL308": r"backward returned None for input 2, but the outputs change with it: .* slope of norm 2",
    "AGL605": r"torch.func.vjp over Double raised RuntimeError: In order to use an autograd.Function with "
              r"functorch transforms .* it must override the setup_context staticmethod",
    "AGL606": r"output 0 of Scale changes with the captured `weight` \(Tensor \(4, 5\) float64\), yet after "
              r"backward its .grad is None",
    "AGL401": r"gradient for input 0 \(Tensor \(3, 4\) float64\) although ctx.needs_input_grad\[0\] is False",
}


@pytest.mark.parametrize("code", sorted(EVIDENCE))
def test_the_evidence_is_pytorchs_own_words_or_the_observed_change(code: str):
    path = FIXTURES / f"{code}_confirmed.py"
    module = load_module(path, "confirm_fixture")
    finding = next(f for f in lint(path) if f["code"] == code)
    cls = class_of(finding, module)
    _, evidence = confirm_finding(cls, inputs_for(cls, module, path), finding)
    assert re.search(EVIDENCE[code], evidence), evidence


def test_ctx_attribute_evidence_names_the_attribute_and_the_cycle():
    path = FIXTURES / "AGL201_confirmed.py"
    module = load_module(path, "confirm_fixture")
    evidence = {}
    for finding in (f for f in lint(path) if f["code"] == "AGL201"):
        cls = class_of(finding, module)
        evidence[cls.__name__] = confirm_finding(cls, inputs_for(cls, module, path), finding)[1]
    assert evidence["SquareAttr"].startswith("ctx.x is a Tensor (4, 5) float64 kept as an attribute (it is input 0")
    assert "ctx.out is a Tensor (4, 5) float64" in evidence["ExpOutputAttr"]
    assert "reference cycle" in evidence["ExpOutputAttr"]


def test_factory_evidence_tells_the_raw_dtype_and_the_precision_loss():
    path = FIXTURES / "AGL402_confirmed.py"
    module = load_module(path, "confirm_fixture")
    evidence = {}
    for finding in (f for f in lint(path) if f["code"] == "AGL402"):
        cls = class_of(finding, module)
        evidence[cls.__name__] = confirm_finding(cls, inputs_for(cls, module, path), finding)[1]
    assert "returned a float32 gradient for float64 input 0" in evidence["Total"]
    assert "changes with torch's default dtype" in evidence["ScaleByConstant"]
    # The float32 buffer raises in index_add_; with float64 as torch's default dtype it does not.
    assert evidence["GatherRows"] == (
        "backward raised RuntimeError: index_add_(): self (Float) and source (Double) must have the same "
        "scalar type with torch's default dtype float32, and ran with float64: a factory in backward ignores "
        "the inputs' dtype")
    assert torch.get_default_dtype() == torch.float32


def test_dot_data_is_confirmed_in_forward_by_the_version_counter_and_in_backward_by_gradgradcheck():
    path = FIXTURES / "AGL304_confirmed.py"
    module = load_module(path, "confirm_fixture")
    evidence = {}
    for finding in (f for f in lint(path) if f["code"] == "AGL304"):
        cls = class_of(finding, module)
        evidence[cls.__name__] = confirm_finding(cls, inputs_for(cls, module, path), finding)[1]
    assert "shares input 0's storage but not its version counter" in evidence["SaveData"]
    assert evidence["CubeDataBackward"].startswith("gradgradcheck failed")


# --- robustness: never raises, unverified when it cannot observe ------------------------------

class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        return x * x, k  # a non-tensor output next to the tensor one

    @staticmethod
    def backward(ctx, grad, _grad_k):
        x, = ctx.saved_tensors
        return 2 * x * grad, None


def _square_inputs():
    return torch.rand(3, dtype=torch.float64, requires_grad=True), 7


@pytest.mark.parametrize("code", CODES)
def test_a_forward_that_raises_gives_unverified_for_every_code(code: str):
    class Broken(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            raise RuntimeError("boom in forward")

        @staticmethod
        def backward(ctx, grad):
            raise RuntimeError("boom in backward")

    make = lambda: (torch.rand(3, dtype=torch.float64, requires_grad=True),)  # noqa: E731
    finding = {"code": code, "function_class": "Broken", "method": "backward",
               "message": "ctx.x is wrong", "line": 1, "column": 1}
    confirmation, evidence = confirm_finding(Broken, make, finding)
    if code in ("AGL104", "AGL605"):
        # Shown before forward runs: by instantiation (AGL104), by apply under torch.func, which
        # refuses a forward that takes ctx (AGL605; Broken's forward does take ctx).
        assert confirmation == "confirmed", evidence
    else:
        assert confirmation == "unverified", evidence
        assert_informative(evidence)


@pytest.mark.parametrize("code", CODES)
def test_inputs_that_cannot_be_built_give_unverified(code: str):
    def make():
        raise ValueError("no such shape")

    finding = {"code": code, "message": "ctx.x is wrong", "method": "forward"}
    confirmation, evidence = confirm_finding(_Square, make, finding)
    assert confirmation == "unverified", evidence
    assert "could not build example inputs: ValueError: no such shape" in evidence


def test_a_checker_that_crashes_gives_unverified_and_does_not_raise(monkeypatch):
    from autograd_lint.dynamic import confirmers

    def crash(subject):
        raise KeyError("internal bug")

    monkeypatch.setitem(confirmers.CONFIRMERS, "AGL201", crash)
    confirmation, evidence = confirm_finding(_Square, _square_inputs, {"code": "AGL201", "message": "ctx.x"})
    assert confirmation == "unverified"
    assert evidence == "the AGL201 check failed: KeyError: 'internal bug'"


def test_a_function_that_calls_sys_exit_gives_unverified():
    class Exits(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            raise SystemExit(3)

        @staticmethod
        def backward(ctx, grad):
            return grad

    make = lambda: (torch.rand(3, dtype=torch.float64, requires_grad=True),)  # noqa: E731
    assert confirm_finding(Exits, make, {"code": "AGL201"}) == (
        "unverified", "the AGL201 check failed: the Function called sys.exit(3)")


@pytest.mark.parametrize("finding", [{"code": "AGL103"}, {"code": "AGL999"}, {}, None])
def test_codes_without_a_runtime_check_are_unverified(finding):
    confirmation, evidence = confirm_finding(_Square, _square_inputs, finding)
    assert confirmation == "unverified"
    assert "cannot confirm" in evidence or "not something --dynamic can confirm" in evidence


@pytest.mark.parametrize("code", CODES)
def test_several_outputs_and_non_tensor_values_do_not_break_any_check(code: str):
    """A correct Function with a non-tensor output and a non-tensor input: no check may crash
    (evidence 'the ... check failed') and none may claim a problem that is not there."""
    finding = {"code": code, "function_class": "_Square", "method": "backward",
               "message": "ctx.x", "line": 1, "column": 1}
    confirmation, evidence = confirm_finding(_Square, _square_inputs, finding)
    assert "check failed" not in evidence, evidence
    if code not in ("AGL104", "AGL605"):  # _Square's forward does take ctx (AGL605's problem)
        assert confirmation != "confirmed", evidence


def test_patches_made_for_spies_and_the_default_dtype_are_undone():
    ctx_class = _Square._backward_cls
    before = dict(vars(ctx_class))
    for code in ("AGL202", "AGL203", "AGL204", "AGL402"):
        confirm_finding(_Square, _square_inputs, {"code": code, "message": "", "method": "forward"})
    assert dict(vars(ctx_class)) == before
    assert torch.get_default_dtype() == torch.float32


def test_importing_confirm_does_not_import_torch():
    """The runner's parent process (and static mode) may import the module: torch stays out."""
    import subprocess

    code = "import sys, autograd_lint.dynamic.confirm as c; print(len(c.CONFIRMABLE_CODES), 'torch' in sys.modules)"
    process = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True)
    assert process.stdout.split() == [str(len(CODES)), "False"], process.stderr


def test_a_caller_in_no_grad_mode_still_gets_a_confirmation():
    path = FIXTURES / "AGL201_confirmed.py"
    module = load_module(path, "confirm_fixture")
    finding = next(f for f in lint(path) if f["code"] == "AGL201")
    cls = class_of(finding, module)
    with torch.no_grad():
        confirmation, _ = confirm_finding(cls, inputs_for(cls, module, path), finding)
    assert confirmation == "confirmed"
