"""When a runtime failure (AGL901-903) is merged into a static finding, and when it is not.

tests/test_dynamic_confirm_cli.py shows merges through the real CLI; these are the cases the
fixtures cannot stage in one run: a static finding that is not confirmed, another class, an
AGL903 with a problem no static rule explains.
"""

from __future__ import annotations

from autograd_lint.dynamic.dedupe import RuntimeResult, merge_explained, merged_line
from autograd_lint.findings import Finding


def static(code: str, confirmation: str = "confirmed", cls: str = "Mul", line: int = 12) -> Finding:
    return Finding(path="ops.py", line=line, column=9, code=code, message="...", function_class=cls,
                   confirmation=confirmation, evidence=f"{code} evidence")


def runtime(code: str, detail: str, kinds: tuple[str, ...] = (), cls: str = "Mul") -> RuntimeResult:
    finding = Finding(path="ops.py", line=4, column=1, code=code, message=f"{cls}: {detail}",
                      function_class=cls, confirmation="confirmed", evidence="with declared inputs @example #1")
    return RuntimeResult(finding, detail, frozenset({cls, f"Outer.{cls}"}), kinds)


def test_a_confirmed_explaining_finding_absorbs_the_runtime_one():
    count = runtime("AGL903", "backward returned 1 value for 2 inputs", ("count",))
    findings, kept, merges = merge_explained([static("AGL201"), static("AGL101")], [count])
    assert kept == []
    assert findings[0].evidence == "AGL201 evidence"
    assert findings[1].evidence == ("AGL101 evidence; also fails AGL903 (merged into this finding): "
                                    "backward returned 1 value for 2 inputs")
    assert [merged_line(merge) for merge in merges] == ["AGL903 -> AGL101 (line 12)"]


def test_a_static_finding_that_was_not_confirmed_explains_nothing():
    for confirmation in ("not-reproduced", "unverified"):
        gradgrad = runtime("AGL902", "gradgradcheck failed: Jacobian mismatch")
        findings, kept, merges = merge_explained([static("AGL305", confirmation)], [gradgrad])
        assert kept == [gradgrad.finding] and merges == []
        assert findings[0].evidence == "AGL305 evidence"


def test_only_the_same_class_and_a_rule_that_causes_the_failure_explain_it():
    gradcheck = runtime("AGL901", "gradcheck failed for input 0 (`x`): max |analytical - numerical| = 2")
    other_class = static("AGL108", cls="Square")
    unrelated_rule = static("AGL201")  # a tensor kept on ctx does not make gradients wrong
    _, kept, _ = merge_explained([other_class, unrelated_rule], [gradcheck])
    assert kept == [gradcheck.finding]


def test_the_class_may_be_named_by_its_qualname():
    gradcheck = runtime("AGL901", "gradcheck raised ValueError: too many values to unpack")
    _, kept, merges = merge_explained([static("AGL205", cls="Outer.Mul")], [gradcheck])
    assert kept == [] and len(merges) == 1


def test_agl903_is_merged_only_when_every_problem_it_found_is_explained():
    mixed = runtime("AGL903", "gradient for input 0 (`x`) is float32, the input float64 (autograd casts it "
                    "silently); gradient for input 1 (`w`) has shape (3,), the input (4,)", ("dtype", "shape"))
    findings, kept, _ = merge_explained([static("AGL402")], [mixed])
    assert kept == [mixed.finding] and findings[0].evidence == "AGL402 evidence"
    dtype_only = runtime("AGL903", "gradient for input 0 (`x`) is float32, the input float64", ("dtype",))
    _, kept, _ = merge_explained([static("AGL402")], [dtype_only])
    assert kept == []


def test_two_explaining_findings_take_the_runtime_failure_once():
    gradgrad = runtime("AGL902", "gradgradcheck failed: Jacobian mismatch")
    findings, kept, merges = merge_explained([static("AGL304", line=33), static("AGL305", line=33)], [gradgrad])
    assert kept == [] and len(merges) == 1
    assert "also fails AGL902" in findings[0].evidence and findings[1].evidence == "AGL305 evidence"
