"""--fix checked at runtime: the fixed code cures what ``--dynamic`` confirms, and still computes
the right gradients.

For every pair ``fixtures/fixes/<CODE>/<case>.py`` / ``<case>.fixed.py``:
1. the real CLI lints the original; each finding of ``<CODE>`` is confirmed at runtime
   (``confirm_finding``) on the original class, with the class's first declared ``@example``, the
   input ``--dynamic`` would choose;
2. the same finding, run against the class of the same name in the fixed module, is
   ``not-reproduced``;
3. every Function class of the fixed module passes gradcheck (slow mode, float64) on each of its
   declared examples.

The exceptions are listed below with the reason; none is skipped silently.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch.autograd.gradcheck import GradcheckError  # noqa: E402

from autograd_lint.dynamic.confirm import CONFIRMABLE_CODES, confirm_finding  # noqa: E402
from autograd_lint.dynamic.inputs import declared_candidates, make_inputs_factory  # noqa: E402
from conftest import REPO_ROOT, class_of, function_classes, load_module, run_cli  # noqa: E402

FIXES = REPO_ROOT / "fixtures" / "fixes"
CASES = sorted(p for p in FIXES.glob("AGL*/*.py")
               if not p.name.endswith(".fixed.py") and not p.name.startswith("nofix"))

# Codes --dynamic has no runtime check for (see autograd_lint/dynamic/confirm.py).
NOT_CONFIRMABLE = {
    "AGL001": "the finding is about a suppression comment, which does nothing at runtime",
    "AGL604": "the deprecated decorator works (with a FutureWarning): nothing fails to confirm",
    "AGL103": "a forward/backward without @staticmethod works at runtime (the class attribute is a "
              "plain function, called as cls.forward(ctx, ...)), so there is nothing to confirm",
    "AGL501": "the finding is about the user's test (gradcheck on float32 inputs), which --dynamic "
              "does not run; test_agl501_fixed_tests_pass_where_the_originals_fail runs those tests",
}

# Originals whose findings are real statically but do no harm on the declared example.
ORIGINAL_NOT_REPRODUCED = {
    "AGL402/basic": "the float32 torch.ones/torch.randn are promoted to float64 by the 2-D gradient they "
                    "multiply, randn is multiplied by 0, and arange gives int64 indices, the right dtype; "
                    "AGL402/zero_dim is the pair whose confirmation flips",
}

# Fixed code the finding's confirmer still confirms, and why that is not a failed fix.
FIXED_STILL_CONFIRMED = {
    "AGL104/basic": "the confirmer probes the class (Relu() warns, calling the instance raises) and the "
                    "fix changes only the call sites, not the class; "
                    "test_agl104_fixed_call_sites_run_and_pass_gradcheck checks the call sites",
}

# What PyTorch (or the confirmer's observation) says on each original: confirmed for the right reason.
ORIGINAL_EVIDENCE = {
    "AGL101": r"returned an incorrect number of gradients \(expected \d+, got \d+\)",
    "AGL104": r"DeprecationWarning|Legacy autograd function",
    "AGL201": r"^ctx\.\w+ is a Tensor .* kept as an attribute",
    "AGL207": r"^ctx\.\w+ is a Tensor .* kept as an attribute",
    "AGL202": r"TypeError: save_for_backward can only save variables",
    "AGL301": r"grad_output 0 changed in place by backward",
    "AGL302": r"saved tensor 0 \((input|output) 0\) changed in place by backward",
    "AGL304": r"shares input 0's storage but not its version counter|gradgradcheck failed",
    "AGL402": r"returned a float32 gradient for float64 input 0",
}

# (case, class, example number) -> the gradcheck error expected on the fixed code.
EXPECTED_GRADCHECK_FAILURES = {
    # The unsafe AGL101 fix returns None for `offset`, which nothing marks as a non-tensor: given a
    # tensor offset that requires grad, it gets no gradient (why the fix needs --unsafe-fixes).
    ("AGL101/unsafe", "Shift", 1): r"Jacobian mismatch for output 0 with respect to input 1",
}


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _fixed(case: Path) -> Path:
    return case.with_name(case.stem + ".fixed.py")


@functools.lru_cache(maxsize=None)
def _findings_by_file(unsafe: bool) -> dict[Path, list[dict]]:
    """One run of the real CLI over the safe (or the unsafe) originals, selecting their codes."""
    cases = [c for c in CASES if c.stem.startswith("unsafe") == unsafe]
    codes = ",".join(sorted({c.parent.name for c in cases}))
    flags = ["--unsafe-fixes"] if unsafe else []
    process = run_cli("--format", "json", "--select", codes, "--no-cache", *flags,
                      *(str(c.relative_to(REPO_ROOT)) for c in cases), cwd=REPO_ROOT)
    assert process.returncode == 1, process.stderr
    by_file: dict[Path, list[dict]] = {}
    for finding in json.loads(process.stdout)["findings"]:
        by_file.setdefault((REPO_ROOT / finding["path"]).resolve(), []).append(finding)
    return by_file


def findings_of(case: Path) -> list[dict]:
    """The original's findings of the case's own code, each one the fixer fixes."""
    code = case.parent.name
    findings = [f for f in _findings_by_file(case.stem.startswith("unsafe")).get(case.resolve(), [])
                if f["code"] == code]
    assert findings, f"{_case_id(case)}: the static rule must flag the original"
    assert all(f["fix_available"] for f in findings), findings
    return findings








def declared_inputs(cls: type, module) -> list:
    """One ``make_inputs`` per declared example, built as the --dynamic child builds them."""
    return [make_inputs_factory(candidate.recipe, "cpu")
            for candidate in declared_candidates(cls, module, {}, module.__file__)]


def first_inputs(cls: type, module):
    makers = declared_inputs(cls, module)
    assert makers, f"{cls.__name__}: declare an @example"
    return makers[0]


def test_the_exceptions_name_real_cases():
    ids = {_case_id(c) for c in CASES}
    listed = set(ORIGINAL_NOT_REPRODUCED) | set(FIXED_STILL_CONFIRMED)
    listed |= {case for case, _, _ in EXPECTED_GRADCHECK_FAILURES}
    assert listed <= ids
    assert set(NOT_CONFIRMABLE) == {c.parent.name for c in CASES} - CONFIRMABLE_CODES


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_fix_turns_the_runtime_confirmation_into_not_reproduced(case: Path):
    code, case_id = case.parent.name, _case_id(case)
    findings = findings_of(case)
    if code in NOT_CONFIRMABLE:
        pytest.skip(f"{code} is not confirmable at runtime: {NOT_CONFIRMABLE[code]}")
    original, fixed = load_module(case, "fix_dynamic"), load_module(_fixed(case), "fix_dynamic")
    expected_before = "not-reproduced" if case_id in ORIGINAL_NOT_REPRODUCED else "confirmed"
    expected_after = "confirmed" if case_id in FIXED_STILL_CONFIRMED else "not-reproduced"
    for finding in findings:
        where = f"{case_id}:{finding['line']}"
        before_class = class_of(finding, original)
        before, evidence = confirm_finding(before_class, first_inputs(before_class, original), finding)
        assert before == expected_before, (where, evidence)
        if before == "confirmed":
            assert re.search(ORIGINAL_EVIDENCE[code], evidence), (where, evidence)

        after_class = getattr(fixed, before_class.__name__)
        after, evidence = confirm_finding(after_class, first_inputs(after_class, fixed), finding)
        assert after == expected_after, (where, evidence)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_every_function_of_the_fixed_code_passes_gradcheck(case: Path):
    module = load_module(_fixed(case), "fix_dynamic")
    classes = function_classes(module)
    assert classes
    for cls in classes:
        makers = declared_inputs(cls, module)
        assert makers, f"{cls.__name__}: declare an @example"
        for number, make_inputs in enumerate(makers, 1):
            expected_failure = EXPECTED_GRADCHECK_FAILURES.get((_case_id(case), cls.__name__, number))
            if expected_failure is None:
                assert torch.autograd.gradcheck(cls.apply, make_inputs(), fast_mode=False), cls.__name__
            else:
                with pytest.raises(GradcheckError, match=expected_failure):
                    torch.autograd.gradcheck(cls.apply, make_inputs(), fast_mode=False)


def _call_site_functions(module) -> list:
    return [value for value in vars(module).values()
            if inspect.isfunction(value) and value.__module__ == module.__name__]


def test_agl104_fixed_call_sites_run_and_pass_gradcheck():
    """The AGL104 fix is at the call sites: the original's warn and raise PyTorch's legacy-call
    error, the fixed ones run and give the right gradients."""
    case = FIXES / "AGL104" / "basic.py"
    original, fixed = load_module(case, "fix_dynamic"), load_module(_fixed(case), "fix_dynamic")
    make_inputs = first_inputs(original.Relu, original)
    calls = _call_site_functions(original)
    assert [f.__name__ for f in calls] == ["relu", "relu_twice"]
    for call in calls:
        with pytest.warns(DeprecationWarning, match="should not be instantiated"), \
                pytest.raises(RuntimeError, match="Legacy autograd function"):
            call(*make_inputs())
        fixed_call = getattr(fixed, call.__name__)
        assert torch.autograd.gradcheck(fixed_call, make_inputs(), fast_mode=False), call.__name__


@pytest.mark.filterwarnings("ignore:Input #0 requires gradient and is not a double precision")
@pytest.mark.parametrize("case", [c for c in CASES if c.parent.name == "AGL501"], ids=_case_id)
def test_agl501_fixed_tests_pass_where_the_originals_fail(case: Path):
    """AGL501's findings are the test functions' float32 gradcheck inputs: run those tests."""
    original, fixed = load_module(case, "fix_dynamic"), load_module(_fixed(case), "fix_dynamic")
    tests = [f for f in _call_site_functions(original) if f.__name__.startswith("test_")]
    assert tests
    for test in tests:
        torch.manual_seed(0)  # the tests draw random inputs
        with pytest.raises(GradcheckError, match="Jacobian mismatch"):
            test()
        torch.manual_seed(0)
        getattr(fixed, test.__name__)()  # gradcheck passes in float64 (it raises otherwise)
