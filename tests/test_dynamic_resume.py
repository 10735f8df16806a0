"""``--dynamic`` accounts for every class when one class hangs, crashes, exits or recurses.

The real CLI, real children. Each module of fixtures/dynamic/*_in_middle.py has a right class A,
a class B whose forward breaks its child (or the run), and a wrong class C after it (forward
``x * 3``, backward ``g * 2``): C's AGL901 must be reported, B named with why, and all three
listed. Only hang_in_middle.py and hangs.py spend a time limit, and they hang for sure
(``while True``), so the limit here is short for them and still wide for everything that should
finish: a forked child imports a module and checks a class in about a second (30 s), a child
with an interpreter of its own imports torch first, a few seconds (40 s: about ten times that).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO_ROOT, assert_no_traceback, run_cli

pytest.importorskip("torch")

DYNAMIC = "fixtures/dynamic"
LIMIT = 30  # seconds per forked child: what a hanging class costs; dozens of times what the others take
OWN_INTERPRETER_LIMIT = 40
MIDDLE = {  # module -> B's status, and the start of its reason
    "hang_in_middle.py": ("timed-out", f"timed out after {LIMIT} s while this class was checked"),
    # B exists only once its factory runs, and the factory hangs
    "factory_hangs_in_middle.py": ("timed-out", f"timed out after {LIMIT} s while this class was checked"),
    "exit_in_middle.py": ("exited", "its code called exit() or sys.exit() while its inputs were built"),
    "abort_in_middle.py": ("crashed", "the module crashed the interpreter (SIGABRT) while this class was checked"),
    "recursion_in_middle.py": ("no-inputs", "could not build inputs (first synthesized try"),
}


def dynamic_run(tmp_path: Path, modules: list[str], fork_server: str = "1", limit: int = LIMIT):
    report_path = tmp_path / "report.json"
    # --exit-zero: C's AGL901 alone would not fail the run; --dynamic-require-checked must, for B.
    result = run_cli("--dynamic", "--dynamic-timeout", str(limit), "--dynamic-require-checked", "--exit-zero",
                     "--format", "json", "--no-cache", "-j", "2", "--dynamic-report", str(report_path),
                     *(f"{DYNAMIC}/{module}" for module in modules), cwd=REPO_ROOT, timeout=1800,
                     env={"AUTOGRAD_LINT_DYNAMIC_FORK_SERVER": fork_server})
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return result, json.loads(result.stdout)["findings"], report


@pytest.fixture(scope="module")
def middle_run(tmp_path_factory):
    """Every module at once, through the fork server: the hang overlaps the others (-j 2)."""
    return dynamic_run(tmp_path_factory.mktemp("resume"), [*MIDDLE, "hangs.py"])


@pytest.mark.parametrize("module", MIDDLE)
def test_the_class_after_a_broken_one_is_still_checked(middle_run, module):
    result, findings, report = middle_run
    status, reason = MIDDLE[module]
    entries = {entry["function_class"].rpartition(".")[2]: entry for entry in report["functions"]
               if entry["path"].endswith(module)}
    assert sorted(entries) == ["A", "B", "C"], entries
    assert (entries["A"]["status"], entries["C"]["status"]) == ("checked", "checked"), entries
    assert entries["B"]["status"] == status and entries["B"]["reason"].startswith(reason), entries["B"]
    assert entries["C"]["runtime_findings"] == ["AGL901"]
    assert [(f["function_class"], f["code"]) for f in findings if f["path"].endswith(module)] == [("C", "AGL901")]
    assert (f"warning: --dynamic: {DYNAMIC}/{module}:{entries['B']['line']}: {entries['B']['function_class']}: "
            f"not checked: {reason}") in result.stderr
    assert_no_traceback(result)


def test_require_checked_follows_the_report(middle_run):
    result, _, report = middle_run
    assert result.returncode == 1, result.stderr  # B of each module (and hangs.py) is not checked
    summary = report["summary"]
    assert summary["function_classes"] == len(report["functions"]) == 3 * len(MIDDLE) + 1
    assert summary["checked"] == 2 * len(MIDDLE)
    # B of hang_in_middle.py and of factory_hangs_in_middle.py, and hangs.py's module
    assert summary["not_checked"]["timed-out"] == 3
    assert f"dynamic: {3 * len(MIDDLE) + 1} Function classes: {2 * len(MIDDLE)} checked, " in result.stderr
    assert "All checks passed" not in result.stderr


def test_a_module_that_hangs_on_import_is_timed_out_as_a_whole(middle_run):
    result, _, report = middle_run
    reason = f"timed out after {LIMIT} s"
    assert [(entry["function_class"], entry["status"], entry["reason"]) for entry in report["functions"]
            if entry["path"].endswith("hangs.py")] == [("NeverChecked", "timed-out", reason)]
    assert f"warning: --dynamic: {DYNAMIC}/hangs.py:14: NeverChecked: not checked: {reason}\n" in result.stderr


def _running_with(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(entry.name)
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_what_a_hung_module_started_is_stopped_with_it(middle_run):
    """hangs.py starts a process in a process group of its own before it hangs (as ninja runs a
    compiler): the timeout kills the child's whole session, that process included."""
    assert _running_with("autograd-lint-fixture-build-tool") == []


def test_one_interpreter_per_module_resumes_after_a_hang_too(tmp_path):
    result, findings, report = dynamic_run(tmp_path, ["hang_in_middle.py"], "0", OWN_INTERPRETER_LIMIT)
    assert result.returncode == 1, result.stderr
    assert [(entry["function_class"], entry["status"]) for entry in report["functions"]] == [
        ("A", "checked"), ("B", "timed-out"), ("C", "checked")]
    assert [(f["function_class"], f["code"]) for f in findings] == [("C", "AGL901")]


def _class(name: str, line: int, stage: str = "done") -> dict:
    entry = {"name": name, "qualname": name, "line": line, "column": 1, "inputs": None, "reason": "",
             "runtime_findings": [], "ran": [], "skipped": [], "stage": stage}
    if stage != "checking":
        entry["seconds"] = 0.1
    return entry


def test_a_module_is_resumed_until_it_finishes_or_hangs_too_often():
    from autograd_lint.dynamic.runner import MAX_TIMEOUTS_PER_MODULE, ChildAnswer, ModuleAnswer

    answer = ModuleAnswer("ops.py")
    hung = ChildAnswer(True, [_class("A", 3), _class("B", 9, "checking")], {}, "timed out after 5 s", "timed-out")
    assert answer.absorb(hung)
    assert answer.skip() == [("A", 3), ("B", 9)]
    assert (answer.classes[1]["status"], answer.classes[1]["broke_child"]) == ("timed-out", True)
    # A class whose checks finished, then hung while its static findings were confirmed: its
    # checks stand, and the child after it goes on.
    confirming = ChildAnswer(True, [_class("C", 15, "confirming")], {}, "timed out after 5 s", "timed-out")
    assert answer.absorb(confirming)
    assert "broke_child" not in answer.classes[2] and answer.classes[2]["confirm_failure"] == "timed out after 5 s"
    assert not answer.absorb(ChildAnswer(True, [_class("D", 20)]))  # finished: no failure left
    assert (answer.failure, answer.status) == ("", "")
    # Each timeout costs a whole limit: after MAX_TIMEOUTS_PER_MODULE, the rest are not reached.
    again = ModuleAnswer("ops.py")
    for number in range(MAX_TIMEOUTS_PER_MODULE):
        resumed = again.absorb(ChildAnswer(True, [_class(f"K{number}", number + 1, "checking")], {},
                                           "timed out after 5 s", "timed-out"))
    assert not resumed and again.failure.startswith(f"not resumed: {MAX_TIMEOUTS_PER_MODULE} of this module's")


def test_classes_a_broken_child_did_not_reach_say_so(tmp_path):
    from autograd_lint.dynamic.runner import ChildAnswer, ModuleAnswer, _function_entries
    from autograd_lint.pipeline import FileResult

    source = tmp_path / "ops.py"
    source.write_text("import torch\n\n\nclass A(torch.autograd.Function):\n    pass\n\n\n"
                      "class B(torch.autograd.Function):\n    pass\n", encoding="utf-8")
    result = FileResult(str(source), function_classes=2, function_class_sites=[("A", 4), ("B", 8)])
    answer = ModuleAnswer(str(source))
    assert answer.absorb(ChildAnswer(True, [_class("A", 4, "checking")], {}, "the module crashed the interpreter "
                                     "(SIGSEGV)", "crashed"))
    assert not answer.absorb(ChildAnswer(False, [], {}, "failed to import: OSError: lock held", "import-failed"))
    entries = [(entry["function_class"], entry["status"], entry["reason"])
               for entry in _function_entries(result, answer, [])]
    assert entries == [
        ("A", "crashed", "the module crashed the interpreter (SIGSEGV) while this class was checked"),
        ("B", "not-reached", "not reached: the module's child stopped first (failed to import: OSError: lock held)"),
    ]


def test_a_resumed_child_starts_with_the_extensions_its_module_built(tmp_path):
    """A module that compiles a C++ extension at import spent most of its first child's time on
    it; the child that resumes after a hang gets the build, times kept, so ninja finds it current."""
    import os

    from autograd_lint.dynamic.runner import _carry_built_extensions

    built = tmp_path / "module-3" / "extensions.d" / "qste_cpu"
    built.mkdir(parents=True)
    (built / "qste_cpu.so").write_bytes(b"\x7fELF")
    os.utime(built / "qste_cpu.so", (1_000_000, 1_000_000))
    resumed = tmp_path / "module-3-1"
    resumed.mkdir()
    _carry_built_extensions(str(tmp_path / "module-3"), str(resumed))
    copied = resumed / "extensions.d" / "qste_cpu" / "qste_cpu.so"
    assert copied.read_bytes() == b"\x7fELF" and copied.stat().st_mtime == 1_000_000
    nothing = tmp_path / "module-4-1"
    nothing.mkdir()
    _carry_built_extensions(str(tmp_path / "module-4"), str(nothing))  # no first child's build: nothing to do
    assert not (nothing / "extensions.d").exists()
