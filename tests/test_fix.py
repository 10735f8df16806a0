"""--fix, --diff and --unsafe-fixes, run through the real CLI.

Each ``fixtures/fixes/<CODE>/<case>.py`` has ``<case>.fixed.py``: the exact bytes ``--fix``
must produce (``--unsafe-fixes`` too for cases named ``unsafe*``). ``nofix*.py`` cases are
findings the fixer must leave alone. The sweeps over every case call the CLI's ``main`` in this
process (three new interpreters per case cost over a minute of the suite's CPU); the tests after
them run the real command. tests/test_fix_dynamic.py runs the same pairs: the runtime
confirmation of each finding, before and after the fix, and gradcheck on the fixed code.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import libcst as cst
import pytest

from conftest import REPO_ROOT, assert_no_traceback, run_cli, run_in_process, write

FIXES = REPO_ROOT / "fixtures" / "fixes"
CASES = sorted(p for p in FIXES.glob("AGL*/*.py")
               if not p.name.endswith(".fixed.py") and not p.name.startswith("nofix"))
NO_FIX = sorted(FIXES.glob("AGL*/nofix*.py"))


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _copy(case: Path, tmp_path: Path) -> Path:
    target = tmp_path / case.name
    shutil.copyfile(case, target)
    return target


def _fix_args(case: Path) -> list[str]:
    unsafe = ["--unsafe-fixes"] if case.stem.startswith("unsafe") else []
    # AGL001 judges a suppression only against the rules the run enables: give it the defaults.
    select = ["--extend-select", case.parent.name] if case.parent.name == "AGL001" else ["--select", case.parent.name]
    return ["--no-cache", *select, "--fix", *unsafe]


def test_every_fixable_code_has_a_fixture():
    from autograd_lint.fix.registry import FIXERS

    assert {p.parent.name for p in CASES} == set(FIXERS)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_fix_gives_the_expected_bytes_lints_clean_compiles_and_is_idempotent(case: Path, tmp_path: Path):
    target = _copy(case, tmp_path)
    original = target.read_bytes()
    expected = case.with_name(case.stem + ".fixed.py").read_bytes()
    assert original != expected, "a fixture must need a fix"

    first = run_in_process(*_fix_args(case), target.name, cwd=tmp_path)
    assert_no_traceback(first)
    assert target.read_bytes() == expected
    assert first.returncode == 0, first.stdout + first.stderr  # nothing of that code remains
    assert "Fixed" in first.stderr and "(0 remaining" in first.stderr

    relint = run_in_process("--no-cache", "--select", case.parent.name, target.name, cwd=tmp_path)
    assert relint.returncode == 0 and relint.stdout == "", relint.stdout
    compile(expected, str(target), "exec", dont_inherit=True)
    cst.parse_module(expected)

    second = run_in_process(*_fix_args(case), target.name, cwd=tmp_path)
    assert target.read_bytes() == expected
    assert "Fixed 0 findings" in second.stderr


@pytest.mark.parametrize("case", [c for c in CASES if c.stem.startswith("unsafe")], ids=_case_id)
def test_unsafe_fixes_need_the_flag(case: Path, tmp_path: Path):
    target = _copy(case, tmp_path)
    original = target.read_bytes()
    result = run_in_process("--no-cache", "--select", case.parent.name, "--fix", target.name, cwd=tmp_path)
    assert target.read_bytes() == original
    assert result.returncode == 1
    assert "more fixable with --unsafe-fixes" in result.stderr
    report = json.loads(run_in_process("--no-cache", "--select", case.parent.name, "--format", "json", target.name,
                                cwd=tmp_path).stdout)
    assert report["findings"] and all(f["fix_available"] for f in report["findings"])


@pytest.mark.parametrize("case", NO_FIX, ids=_case_id)
def test_findings_without_a_sure_fix_are_left_alone(case: Path, tmp_path: Path):
    target = _copy(case, tmp_path)
    original = target.read_bytes()
    result = run_in_process("--no-cache", "--select", case.parent.name, "--fix", "--unsafe-fixes", target.name,
                            cwd=tmp_path)
    assert result.returncode == 1 and case.parent.name in result.stdout
    assert target.read_bytes() == original
    report = json.loads(run_in_process("--no-cache", "--select", case.parent.name, "--format", "json", target.name,
                                cwd=tmp_path).stdout)
    assert report["findings"] and not any(f["fix_available"] for f in report["findings"])


def test_json_marks_fixable_findings_and_text_stays_flake8(tmp_path: Path):
    case = FIXES / "AGL104" / "basic.py"
    target = _copy(case, tmp_path)
    report = json.loads(run_cli("--no-cache", "--select", "AGL104", "--format", "json", target.name,
                                cwd=tmp_path).stdout)
    assert [f["fix_available"] for f in report["findings"]] == [True, True, True]
    text = run_cli("--no-cache", "--select", "AGL104", target.name, cwd=tmp_path)
    assert all(line.startswith("basic.py:") and ": AGL104 " in line for line in text.stdout.splitlines())
    assert "[*] 3 fixable with --fix." in text.stderr


def test_diff_prints_and_writes_nothing(tmp_path: Path):
    case = FIXES / "AGL103" / "basic.py"
    target = _copy(case, tmp_path)
    original = target.read_bytes()
    before = os.stat(target).st_mtime_ns
    result = run_cli("--no-cache", "--select", "AGL103", "--diff", target.name, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("--- a/basic.py\n+++ b/basic.py\n@@ ")
    assert result.stdout.count("+    @staticmethod\n") == 3
    assert target.read_bytes() == original and os.stat(target).st_mtime_ns == before
    # --diff wins over --fix: still nothing written
    both = run_cli("--no-cache", "--select", "AGL103", "--diff", "--fix", target.name, cwd=tmp_path)
    assert both.returncode == 1 and both.stdout == result.stdout
    assert target.read_bytes() == original


def test_diff_of_a_clean_file_is_empty_and_exits_0(tmp_path: Path):
    target = _copy(FIXES / "AGL103" / "basic.fixed.py", tmp_path)
    result = run_cli("--no-cache", "--select", "AGL103", "--diff", target.name, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""


def test_nothing_is_written_without_fix(tmp_path: Path):
    target = _copy(FIXES / "AGL301" / "basic.py", tmp_path)
    original = target.read_bytes()
    result = run_cli("--no-cache", "--select", "AGL301", target.name, cwd=tmp_path)
    assert result.returncode == 1 and target.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["basic.py"]  # no temporary files either


def test_fix_keeps_permissions_and_symlinks(tmp_path: Path):
    target = _copy(FIXES / "AGL103" / "basic.py", tmp_path)
    os.chmod(target, 0o640)
    link = tmp_path / "link.py"
    link.symlink_to(target.name)
    result = run_cli("--no-cache", "--select", "AGL103", "--fix", "link.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink()
    assert target.read_bytes() == (FIXES / "AGL103" / "basic.fixed.py").read_bytes()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["basic.py", "link.py"]


def test_fix_keeps_a_bom_and_a_coding_cookie(tmp_path: Path):
    source = (FIXES / "AGL103" / "basic.py").read_text(encoding="utf-8")
    expected = (FIXES / "AGL103" / "basic.fixed.py").read_text(encoding="utf-8")
    bom = write(tmp_path / "bom.py", b"\xef\xbb\xbf" + source.encode("utf-8"))
    latin = write(tmp_path / "latin.py", ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + source).encode("latin-1"))
    result = run_cli("--no-cache", "--select", "AGL103", "--fix", "bom.py", "latin.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert bom.read_bytes() == b"\xef\xbb\xbf" + expected.encode("utf-8")
    assert latin.read_bytes() == ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + expected).encode("latin-1")


def test_exit_code_counts_what_remains(tmp_path: Path):
    target = _copy(FIXES / "AGL104" / "nofix.py", tmp_path)
    write(tmp_path / "other.py", (FIXES / "AGL104" / "basic.py").read_bytes())
    result = run_cli("--no-cache", "--select", "AGL104", "--fix", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "Fixed 3 findings (1 remaining)" in result.stderr
    assert result.stdout.startswith("./nofix.py:17:") and len(result.stdout.splitlines()) == 1
    assert target.read_bytes() == (FIXES / "AGL104" / "nofix.py").read_bytes()


def test_a_fix_that_would_not_parse_leaves_the_file_untouched(tmp_path: Path, monkeypatch):
    from autograd_lint.fix import registry
    from autograd_lint.fix.edits import Fix

    def broken(context, finding):
        function = next(n for n in context.positions if isinstance(n, cst.FunctionDef))
        return Fix("AGL103", safe=True, edits={function.name: cst.Name("lambda")})  # `def lambda(`

    monkeypatch.setitem(registry.FIXERS, "AGL103", broken)
    target = _copy(FIXES / "AGL103" / "basic.py", tmp_path)
    original = target.read_bytes()
    result = run_in_process("--no-cache", "--select", "AGL103", "--fix", target.name, cwd=tmp_path)
    assert_no_traceback(result)
    assert "basic.py: fix for AGL103 would not parse; file left unchanged" in result.stderr
    assert target.read_bytes() == original
    assert result.returncode == 1


def test_a_fixer_that_raises_is_reported_with_fix_and_silent_without(tmp_path: Path, monkeypatch):
    from autograd_lint.fix import registry

    def crashing(context, finding):
        raise ValueError("no such node\nsecond line")

    monkeypatch.setitem(registry.FIXERS, "AGL103", crashing)
    target = _copy(FIXES / "AGL103" / "basic.py", tmp_path)
    original = target.read_bytes()

    fixed = run_in_process("--no-cache", "--select", "AGL103", "--fix", target.name, cwd=tmp_path)
    assert_no_traceback(fixed)
    failure = "basic.py: fixer for AGL103 failed: ValueError: no such node\n"  # its first line only
    assert fixed.stderr.count(failure) == 1, fixed.stderr  # once per file, though three findings and rounds
    assert target.read_bytes() == original and fixed.returncode == 1
    assert fixed.stdout.count(": AGL103 ") == 3

    diff = run_in_process("--no-cache", "--select", "AGL103", "--diff", target.name, cwd=tmp_path)
    assert failure in diff.stderr and diff.stdout == "" and diff.returncode == 0

    plain = run_in_process("--no-cache", "--select", "AGL103", target.name, cwd=tmp_path)
    assert_no_traceback(plain)
    assert "failed" not in plain.stderr and "fixable" not in plain.stderr
    assert plain.returncode == 1 and plain.stdout.count(": AGL103 ") == 3


MANY_CLASSES = "import torch\n" + "".join(f"""
# class {i}
class Scale{i}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.x = x
        return x * w

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.x
""" for i in range(6))


def test_a_fixing_run_builds_the_whole_module_from_its_classes_and_fixes_the_same(tmp_path: Path, monkeypatch):
    # Each round's whole-module tree is put together from the class trees the lint parsed
    # (analysis/whole_module.py): libcst never parses the whole text, and the fixes are those
    # of a whole parse.
    from autograd_lint.fix import context

    target = write(tmp_path / "many.py", MANY_CLASSES)
    parsed: list[int] = []
    parse_module = cst.parse_module

    def counting(source, *args, **kwargs):
        parsed.append(len(source))
        return parse_module(source, *args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", counting)
    assembled = run_in_process("--no-cache", "--diff", "--unsafe-fixes", target.name, cwd=tmp_path)
    assert assembled.returncode == 1 and assembled.stdout.count("+        ctx.save_for_backward(x)") == 6
    assert parsed and max(parsed) < len(MANY_CLASSES) / 2, parsed

    parsed.clear()
    monkeypatch.setattr(context, "assemble", lambda *args, **kwargs: None)
    whole = run_in_process("--no-cache", "--diff", "--unsafe-fixes", target.name, cwd=tmp_path)
    assert max(parsed) >= len(MANY_CLASSES)  # the same run, parsing the whole text
    assert (whole.stdout, whole.stderr, whole.returncode) == (assembled.stdout, assembled.stderr, assembled.returncode)


def test_the_libcst_free_list_of_fixable_codes_matches_the_registry():
    """cli and engine decide from FIXABLE_CODES whether to load the fixers at all."""
    from autograd_lint.fix.options import FIXABLE_CODES
    from autograd_lint.fix.registry import FIXERS

    assert FIXABLE_CODES == set(FIXERS)
