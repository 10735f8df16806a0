"""``--dynamic``: numbers, shapes and inputs that forward's code, or the package's own caller,
shows before any guess (fixtures/dynamic/read_from_code.py; the real CLI, one child, wide time
limits), and the readers of ``synthesis`` on their own."""

from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT, WIDE_DYNAMIC_TIMEOUT, assert_no_traceback, load_module, run_cli

torch = pytest.importorskip("torch")

MODULE = "fixtures/dynamic/read_from_code.py"
REACHED = ("FirstRows", "NarrowAlong", "ClampScaled", "SolveFor", "CrossWith", "PairLinear", "ScaledBy", "CastOnto",
           "LeadingColumns", "WithOptions", "SampleVolume", "StarLinear", "WidthScaled", "SumOverTokens")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    report_path = tmp_path_factory.mktemp("read_from_code") / "report.json"
    result = run_cli("--dynamic", "--dynamic-timeout", WIDE_DYNAMIC_TIMEOUT, "--format", "json", "--no-cache",
                     "--select", "AGL901", "--dynamic-report", str(report_path), MODULE, cwd=REPO_ROOT, timeout=900)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr
    report = {entry["function_class"]: entry for entry in json.loads(report_path.read_text())["functions"]}
    findings = {(f["function_class"], f["code"]): f for f in json.loads(result.stdout)["findings"]}
    return report, findings


def detail(report: dict, name: str) -> str:
    return report[name]["inputs"]["detail"]


def test_every_class_is_gradchecked_and_only_the_near_misses_fail(run):
    report, findings = run
    for name in REACHED:
        for variant in (name, f"{name}Wrong"):
            assert "gradcheck" in report[variant]["ran"], (variant, report[variant])
    assert {name for name, code in findings if code == "AGL901"} == {f"{name}Wrong" for name in REACHED}
    for name in REACHED:
        assert findings[(f"{name}Wrong", "AGL901")]["severity"] == "error", name


def test_counts_dimensions_and_clamp_bounds_are_python_numbers(run):
    report, _ = run
    assert detail(report, "FirstRows") == "same (3, 4): x (3, 4), k=2"  # `x[:k]`
    assert detail(report, "NarrowAlong") == "same (3, 4): x (3, 4), d=-1, start=0, k=2"  # `x.narrow(d, start, k)`
    # `scale` is a number by its name, but forward reads `scale.to(...)`: a tensor; the bounds are numbers.
    assert detail(report, "ClampScaled") == "same (3, 4): x (3, 4), scale (3, 4), lo=-0.5, hi=0.5"


def test_star_arguments_that_forward_unpacks_are_that_many_arguments(run):
    report, _ = run  # `x, weight, bias, k, flip = args`: five, each read by its name
    assert detail(report, "StarLinear").startswith("linear: x (3, 4), weight (5, 4), bias (5,), k=2, flip ")


def test_a_number_or_a_sequence_of_numbers_is_a_number(run):
    report, _ = run  # `width: float | tuple[float, ...]`
    assert detail(report, "WidthScaled") == "same (3, 4): x (3, 4), width=0.5"


def test_a_size_read_at_a_constant_index_needs_that_many_dimensions(run):
    report, _ = run  # `query.shape[-3]`
    assert detail(report, "SumOverTokens") == "same (3, 4): query (3, 2, 4)"


def test_shapes_read_from_forward_and_from_a_matrix_products_error(run):
    report, _ = run
    assert detail(report, "SolveFor") == "square (4, 4): A (4, 4), b (4, 4)"
    assert detail(report, "CrossWith").endswith("a (2, 3), b (2, 3)")
    assert detail(report, "PairLinear") == "same (3, 4): inputs (3, 6), first (3, 4), second (3, 4), bias=None"


def test_a_callers_tensors_that_need_no_grad_are_made_to(run):
    report, _ = run
    for name in ("ScaledBy", "ScaledByWrong"):
        assert report[name]["status"] == "checked"
        assert detail(report, name).startswith("through self_test()")
        assert detail(report, name).endswith("its float tensors made to require grad")


# --- the readers, without a child ----------------------------------------------------------------

@pytest.fixture(scope="module")
def fixture_module():
    return load_module(REPO_ROOT / MODULE, "read_from_code")


def first_candidate(cls: type) -> str:
    from autograd_lint.dynamic import synthesis

    return next(synthesis.candidates(cls)).detail


def test_the_first_guess_already_follows_the_code(fixture_module):
    assert first_candidate(fixture_module.NarrowAlong) == "same (3, 4): x (3, 4), d=-1, start=0, k=2"
    assert first_candidate(fixture_module.SolveFor) == "square (4, 4): A (4, 4), b (4, 4)"  # square plans first
    assert first_candidate(fixture_module.CrossWith) == "same (3, 4): a (3, 3), b (3, 4)"  # `a.shape[-1] == 3`


def test_a_comparison_outside_a_test_is_a_tensor_op_not_a_number():
    """`x > 0` computed into a mask says nothing of `x`; `if n > 1:` does, as does `range(n)`;
    NumPy's `np.sum(x, axis)` is no torch dimension; a parameter whose `.shape` forward reads
    stays a tensor even where it is also compared."""
    from autograd_lint.dynamic import synthesis

    source = (
        "def forward(ctx, x, n, w, m):\n"
        "    mask = x > 0\n"
        "    if n > 1:\n"
        "        pass\n"
        "    np.sum(w, m)\n"
        "    if w.shape[0] == 2:\n"
        "        pass\n"
        "    return x * mask\n")
    import ast

    function = ast.parse(source).body[0]
    slots = [synthesis.Slot(name, synthesis.FLOAT, guessed=True) for name in ("x", "n", "w", "m")]
    read = {slot.name: (slot.kind, slot.values) for slot in synthesis.counted_in_forward(function, slots)}
    assert read == {"x": (synthesis.FLOAT, ()), "n": ("value", (2, 1)), "w": (synthesis.FLOAT, ()),
                    "m": (synthesis.FLOAT, ())}


def test_a_lone_size_argument_may_be_a_whole_shape():
    """`x.repeat(factors)` takes a tuple as well as a count: not read as a number; `x.view(-1, k)`
    beside another size is one."""
    import ast

    from autograd_lint.dynamic import synthesis

    function = ast.parse("def forward(ctx, x, factors, k):\n    return x.repeat(factors).view(-1, k)\n").body[0]
    slots = [synthesis.Slot(name, synthesis.FLOAT, guessed=True) for name in ("x", "factors", "k")]
    read = {slot.name: slot.kind for slot in synthesis.counted_in_forward(function, slots)}
    assert read == {"x": synthesis.FLOAT, "factors": synthesis.FLOAT, "k": "value"}


def test_a_dtype_and_a_device_named_so_are_passed_as_such(run):
    report, _ = run
    assert "out_dtype=torch.float64, device=the run's device" in detail(report, "CastOnto"), report["CastOnto"]


def test_a_parameter_made_an_int_is_a_count(run):
    report, _ = run
    assert "K=2, J=2" in detail(report, "LeadingColumns"), report["LeadingColumns"]


def test_a_parameter_annotated_as_a_dict_is_an_empty_one(run):
    report, _ = run
    assert "options={}" in detail(report, "WithOptions"), report["WithOptions"]


def test_ranks_and_a_last_size_that_forward_asserts_are_taken(run):
    report, _ = run
    shapes = report["SampleVolume"]["inputs"]["shapes"]
    volume, grid = (shape.strip() for shape in shapes.split("),"))
    assert volume.count(",") == 4 and grid.count(",") == 4, shapes  # five dimensions each
    assert grid.rstrip(")").endswith("3"), shapes
