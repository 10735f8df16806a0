"""An unknown never makes an error (analysis/certainty.py, docs/architecture.md).

Every fixture directory is linted twice with the real CLI: as it is, and with every autograd
method of every class wrapped in a decorator imported from a library the linter cannot read.
Each error of the first run must, in the second, be the same error (the decorator cannot change
the fact it rests on) or a warning that names the decorator; and no error may appear that the
first run did not report. Then decorators the model can read: a project's own wrapper that makes
the gradients contiguous silences AGL403 wherever it is defined and re-exported, a transparent
wrapper changes nothing, and torch's own decorators are not unknowns.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from autograd_lint.catalogue import RULES
from conftest import REPO_ROOT, run_cli

FIXTURES = REPO_ROOT / "fixtures"
# AGL000's files do not parse: a line put into them moves the syntax error, not a fact.
FIXTURE_DIRS = sorted(p for p in FIXTURES.glob("AGL*") if p.is_dir() and p.name != "AGL000")
AUTOGRAD_DEF = re.compile(r"^([ \t]+)def (forward|backward|setup_context|jvp|vjp)\(", re.M)
UNREADABLE = "unreadable_wrapper"


def _wrap_autograd_methods(text: str) -> tuple[str, list[int]]:
    """The text with ``@unreadable_wrapper`` above each autograd method's ``def``, and the
    original line numbers the decorator lines were put before."""
    lines = text.split("\n")
    out, inserted_before = [], []
    for number, line in enumerate(lines, start=1):
        match = AUTOGRAD_DEF.match(line)
        if match:
            out.append(f"{match.group(1)}@{UNREADABLE}")
            inserted_before.append(number)
        out.append(line)
    out.append(f"from some_library_outside_the_project import {UNREADABLE}  # noqa: E402")
    return "\n".join(out), inserted_before


def _lint(root: Path) -> list[dict]:
    codes = ",".join(code for code, info in RULES.items() if info.static)
    proc = run_cli("--format", "json", "--no-cache", "--select", codes, ".", cwd=root, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    findings = json.loads(proc.stdout)["findings"]
    for finding in findings:
        finding["path"] = finding["path"].removeprefix("./")
    return findings


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory):
    plain = tmp_path_factory.mktemp("plain")
    wrapped = tmp_path_factory.mktemp("wrapped")
    moved: dict[str, list[int]] = {}
    for root in (plain, wrapped):
        (root / "pyproject.toml").write_text('[tool.autograd-lint]\nsubprojects = ["*"]\n')
    for directory in FIXTURE_DIRS:
        shutil.copytree(directory, plain / directory.name)
        shutil.copytree(directory, wrapped / directory.name)
        for path in sorted((wrapped / directory.name).rglob("*.py")):
            text = path.read_bytes().decode("utf-8", errors="replace")
            if "\r" in text or not AUTOGRAD_DEF.search(text):
                continue
            new_text, inserted = _wrap_autograd_methods(text)
            path.write_text(new_text, encoding="utf-8")
            moved[path.relative_to(wrapped).as_posix()] = inserted
    return _lint(plain), _lint(wrapped), moved


def _moved_line(path: str, line: int, moved: dict[str, list[int]]) -> int:
    return line + sum(1 for before in moved.get(path, ()) if before <= line)


def test_every_error_stays_or_becomes_a_warning_that_names_the_decorator(both_runs):
    plain, wrapped, moved = both_runs
    after = {}
    for finding in wrapped:
        after.setdefault((finding["path"], finding["line"], finding["code"]), []).append(finding)
    errors = [f for f in plain if f["severity"] == "error"]
    assert len(errors) > 100  # the fixtures' errors: a check of nothing would pass too
    lost, unnamed = [], []
    for finding in errors:
        key = (finding["path"], _moved_line(finding["path"], finding["line"], moved), finding["code"])
        found = after.get(key, [])
        if not found:
            continue  # the rule went silent: allowed, it could not decide
        if all(f["severity"] == "warning" for f in found):
            if not all(UNREADABLE in f["message"] for f in found):
                unnamed.append(key)
        elif not any(f["severity"] == "error" for f in found):
            lost.append(key)
    assert not unnamed, f"warnings that do not say what could not be read: {unnamed}"
    assert not lost, lost


def test_no_error_appears_behind_an_unreadable_decorator(both_runs):
    plain, wrapped, moved = both_runs
    before = {(f["path"], _moved_line(f["path"], f["line"], moved), f["code"])
              for f in plain if f["severity"] == "error"}
    new = [(f["path"], f["line"], f["code"], f["message"]) for f in wrapped
           if f["severity"] == "error" and (f["path"], f["line"], f["code"]) not in before]
    assert not new, new


def test_some_errors_rest_on_the_decorated_interface_and_some_do_not(both_runs):
    """Both outcomes happen: a count of gradients (AGL101) becomes a warning, a tensor kept on
    ctx by forward's body is judged by the body (AGL202 stays an error)."""
    _, wrapped, _ = both_runs
    by_code = {}
    for finding in wrapped:
        by_code.setdefault(finding["code"], set()).add(finding["severity"])
    assert by_code["AGL101"] == {"warning"}
    assert "error" in by_code["AGL202"]


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


KERNEL_FUNCTION = textwrap.dedent("""
    import torch
    import triton
    from {module} import {decorator}


    @triton.jit
    def _backward_kernel(grad_ptr, out_ptr, n):
        pass


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @{decorator}
        def backward(ctx, grad):
            out = torch.empty_like(grad)
            _backward_kernel[(1,)](grad, out, grad.numel())
            return out
""")

CONTIGUOUS_GUARD = textwrap.dedent("""
    import functools

    import torch


    def _contiguous_if_needed(arg):
        if isinstance(arg, torch.Tensor):
            return arg.contiguous()
        return arg


    def input_guard(fn=None, *, skip=False):
        def decorator(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                processed = []
                for arg in args:
                    processed.append(_contiguous_if_needed(arg))
                with torch.cuda.device(0):
                    return fn(*processed, **kwargs)
            return wrapper
        if fn is not None:
            return decorator(fn)
        return decorator
""")

TRANSPARENT_GUARD = textwrap.dedent("""
    import functools


    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            print("calling", fn.__name__)
            return fn(*args, **kwargs)
        return wrapper
""")


def _agl403(root: Path) -> list[dict]:
    proc = run_cli("--format", "json", "--no-cache", "--select", "AGL000,AGL403", ".", cwd=root)
    findings = json.loads(proc.stdout)["findings"]
    assert not [f for f in findings if f["code"] == "AGL000"], findings  # every file was read
    return [f for f in findings if f["code"] == "AGL403"]


def test_a_project_decorator_that_makes_gradients_contiguous_is_read_across_modules(tmp_path):
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils/__init__.py": "from pkg.utils.decorators import input_guard\n",
        "pkg/utils/decorators.py": CONTIGUOUS_GUARD,
        "pkg/ops.py": KERNEL_FUNCTION.format(module="pkg.utils", decorator="input_guard"),
    })
    assert _agl403(root) == []


def test_a_transparent_project_decorator_changes_nothing(tmp_path):
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/log.py": TRANSPARENT_GUARD,
        "pkg/ops.py": KERNEL_FUNCTION.format(module="pkg.log", decorator="logged"),
    })
    [finding] = _agl403(root)
    assert finding["severity"] == "error" and "not certain" not in finding["message"]


def test_a_decorator_from_outside_the_project_lowers_the_error_and_says_so(tmp_path):
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/ops.py": KERNEL_FUNCTION.format(module="somewhere_else", decorator="mystery"),
    })
    [finding] = _agl403(root)
    assert finding["severity"] == "warning"
    assert "backward is wrapped by @mystery, which autograd-lint cannot read" in finding["message"]


def test_torchs_own_decorators_are_read(tmp_path):
    source = KERNEL_FUNCTION.format(module="torch.autograd.function", decorator="once_differentiable")
    source = source.replace("        @once_differentiable\n",
                            "        @once_differentiable\n        @torch.amp.custom_bwd(device_type='cuda')\n")
    root = _project(tmp_path, {"ops.py": source})
    [finding] = _agl403(root)
    assert finding["severity"] == "error"


def test_a_private_ctx_name_no_method_sets_is_a_warning_and_a_public_one_an_error():
    proc = run_cli("--format", "json", "--no-cache", "--select", "AGL206", "fixtures/AGL206/bad.py", cwd=REPO_ROOT)
    findings = json.loads(proc.stdout)["findings"]
    by_name = {re.search(r"ctx\.(\w+)", f["message"]).group(1): f["severity"] for f in findings}
    assert by_name["_scale"] == "warning"
    assert by_name["axis"] == "error"


def test_torchs_ctx_members_are_never_undefined():
    proc = run_cli("--format", "json", "--no-cache", "--select", "AGL206", "fixtures/AGL206/good.py", cwd=REPO_ROOT)
    assert json.loads(proc.stdout)["findings"] == []


SHORT_OF_A_GRADIENT = textwrap.dedent("""
    import torch


    class {name}(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight):
            ctx.save_for_backward(x, weight)
            return x * weight

        @staticmethod
        def backward(ctx, grad):
            x, weight = ctx.saved_tensors
            return grad * weight
""")


def test_a_class_nothing_can_reach_gets_a_warning_that_says_so(tmp_path):
    root = _project(tmp_path, {
        "pkg/__init__.py": "from pkg._impl import used\n",
        "pkg/_experimental.py": SHORT_OF_A_GRADIENT.format(name="Unreached"),
        "pkg/_impl.py": SHORT_OF_A_GRADIENT.format(name="Applied") + "\n\ndef used(x, w):\n    return Applied.apply(x, w)\n",
        "pkg/ops.py": SHORT_OF_A_GRADIENT.format(name="PublicApi"),
        "pkg/_composite.py": SHORT_OF_A_GRADIENT.format(name="RunByAnother")
        + "\n\ndef run(ctx, x, w):\n    return RunByAnother.forward(ctx, x, w)\n",
    })
    proc = run_cli("--format", "json", "--no-cache", "--select", "AGL101", ".", cwd=root)
    by_class = {f["function_class"]: f for f in json.loads(proc.stdout)["findings"]}
    assert by_class["Unreached"]["severity"] == "warning"
    assert "no code of the project applies Unreached, and its module is private" in by_class["Unreached"]["message"]
    # applied in the project, public (its callers are elsewhere), or run by another Function
    assert {by_class[name]["severity"] for name in ("Applied", "PublicApi", "RunByAnother")} == {"error"}


def test_a_vendored_copy_of_a_package_is_read_under_the_name_it_is_imported_by(tmp_path):
    """unsloth_zoo vendors fla as `unsloth_zoo/_vendored/fla` and imports `from fla.utils import
    input_guard`: the decorator is the vendored copy's, found by the end of its module name."""
    root = _project(tmp_path, {
        "zoo/__init__.py": "",
        "zoo/_vendored/__init__.py": "",
        "zoo/_vendored/fla/__init__.py": "",
        "zoo/_vendored/fla/utils.py": CONTIGUOUS_GUARD,
        "zoo/_vendored/fla/ops.py": KERNEL_FUNCTION.format(module="fla.utils", decorator="input_guard")
        + "\n\ndef scale(x):\n    return Scale.apply(x)\n",
    })
    assert _agl403(root) == []
