"""The command line as users run it: exit codes, output formats, discovery, selection.

Tests that need findings without the analysis use ``--max-file-size 1``: the CLI itself reports
every file over the limit as AGL000, so the path, exit code and format logic is exercised with
findings whatever the engine does. Tests marked ``needs_engine`` assert findings of the analysis.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import jsonschema
import pytest

from autograd_lint import __version__
from autograd_lint.catalogue import RULES
from conftest import BUGGY_SOURCE, CLEAN_SOURCE, REPO_ROOT, assert_no_traceback, run_in_process, write

# flake8's default format: path:row:col: CODE text
FLAKE8_LINE = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<col>\d+): (?P<code>AGL\d{3}) (?P<msg>.+)$")

FINDING_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path", "line", "column", "end_line", "end_column", "code", "name", "severity",
                 "message", "function_class", "method", "fix_available", "confirmation", "evidence"],
    "properties": {
        "path": {"type": "string"},
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1},
        "end_line": {"type": "integer", "minimum": 1},
        "end_column": {"type": "integer", "minimum": 1},
        "code": {"enum": list(RULES)},
        "name": {"type": "string"},
        "severity": {"enum": ["error", "warning", "info"]},
        "message": {"type": "string", "minLength": 1},
        "function_class": {"type": ["string", "null"]},
        "method": {"type": ["string", "null"]},
        "fix_available": {"type": "boolean"},
        "confirmation": {"enum": [None, "confirmed", "not-reproduced", "unverified"]},
        "evidence": {"type": ["string", "null"]},
    },
}
REPORT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["version", "findings", "summary"],
    "properties": {
        "version": {"const": 1},
        "findings": {"type": "array", "items": FINDING_SCHEMA},
        "summary": {
            "type": "object",
            "additionalProperties": False,
            "required": ["files", "files_with_functions", "function_classes", "findings", "seconds"],
            "properties": {
                "files": {"type": "integer", "minimum": 0},
                "files_with_functions": {"type": "integer", "minimum": 0},
                "function_classes": {"type": "integer", "minimum": 0},
                "findings": {"type": "integer", "minimum": 0},
                "seconds": {"type": "number", "minimum": 0},
            },
        },
    },
}


def json_report(result: subprocess.CompletedProcess) -> dict:
    report = json.loads(result.stdout)
    jsonschema.validate(report, REPORT_SCHEMA)
    return report


def linted_paths(cwd, *args: str) -> list[str]:
    """The files the CLI lints for these arguments, in output order (via the size limit)."""
    result = run_in_process("--max-file-size", "1", "--format", "json", *args, cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return [finding["path"] for finding in json_report(result)["findings"]]


# --- basics ------------------------------------------------------------------------------------

def test_version(cli):
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"autograd-lint {__version__}"


def test_help_documents_exit_codes(cli):
    result = cli("--help")
    assert result.returncode == 0
    assert "--select" in result.stdout and "exit status: 0 no findings, 1 findings, 2" in result.stdout


def test_console_script_entry_point_is_run():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["autograd-lint"] == "autograd_lint.cli:run"


def test_clean_file_exits_0_with_nothing_on_stdout(cli, tmp_path):
    write(tmp_path / "ok.py")
    result = cli("ok.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "All checks passed (1 file checked)." in result.stderr


def test_missing_path_is_one_error_line_and_the_rest_is_linted(cli, tmp_path):
    write(tmp_path / "ok.py")
    result = cli("ok.py", "nope.py")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("autograd-lint: error: nope.py: no such file or directory\n")
    assert "All checks passed (1 file checked)." in result.stderr


def test_unknown_selector_is_a_usage_error(cli, tmp_path):
    write(tmp_path / "ok.py")
    result = cli("--select", "AGL7", "ok.py")
    assert result.returncode == 2
    assert "unknown rule selector 'AGL7' in --select" in result.stderr
    assert_no_traceback(result)


@pytest.mark.parametrize("args", [
    ["--format", "xml", "."],
    ["--max-file-size", "-3", "."],
    ["--jobs", "many", "."],
    ["--color", "--no-color", "."],
    ["--bogus"],
    ["--statistics", "--format", "sarif", "."],
])
def test_bad_options_exit_2_without_traceback(cli, args):
    result = cli(*args)
    assert result.returncode == 2
    assert "error:" in result.stderr
    assert_no_traceback(result)


def test_default_path_is_current_directory(tmp_path):
    write(tmp_path / "pkg" / "a.py")
    assert linted_paths(tmp_path) == ["./pkg/a.py"]


def test_directory_without_python_files_warns_and_exits_0(cli, tmp_path):
    write(tmp_path / "docs" / "notes.txt", "hello")
    result = cli("docs")
    assert result.returncode == 0
    assert "no Python files found under docs" in result.stderr


def test_jobs_is_accepted(cli_fast, tmp_path):
    write(tmp_path / "ok.py")
    assert cli_fast("--jobs", "4", "ok.py").returncode == 0
    assert cli_fast("-j", "auto", "ok.py").returncode == 0


def test_static_mode_imports_neither_torch_nor_user_code(tmp_path):
    write(tmp_path / "bad.py", BUGGY_SOURCE + "raise SystemExit('user code ran')\n")
    probe = (
        "import sys\n"
        "from autograd_lint.cli import main\n"
        "code = main(['bad.py', '-q'])\n"
        "assert 'torch' not in sys.modules, 'static mode imported torch'\n"
        "assert 'bad' not in sys.modules\n"
        "print('exit', code)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "user code ran" not in result.stdout + result.stderr


def test_cli_import_leaves_out_what_a_plain_run_may_not_need():
    """Every run, `--help` and `--version` included, pays for importing the CLI (issue 30: under
    60 ms; bench/NOTES.md has the figures). `dataclasses` (with `inspect`) and `typing` were a
    third of it; the engine, the cache and each report format but text load when a run needs them."""
    deferred = ("dataclasses", "inspect", "typing", "tokenize", "json", "pickle", "tomllib", "hashlib",
                "libcst", "autograd_lint.engine", "autograd_lint.findings", "autograd_lint.cache",
                "autograd_lint.analysis", "autograd_lint.report.json_format", "autograd_lint.report.sarif")
    probe = f"import sys, autograd_lint.cli; print(sorted(m for m in {deferred!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True,
                            check=True, timeout=60)
    assert result.stdout.strip() == "[]"


def test_a_run_the_cache_answers_loads_neither_the_analysis_nor_typing(tmp_path):
    """The run an editor or pre-commit repeats on every save (bench/NOTES.md: `typing` was 4%
    of it). The first run fills the cache; the second is answered by it."""
    write(tmp_path / "bad.py", BUGGY_SOURCE)
    probe = ("import sys\nfrom autograd_lint.cli import main\nmain(['bad.py', '-q', '--exit-zero'])\n"
             "print(sorted(m for m in ('typing', 'libcst', 'autograd_lint.run_steps') if m in sys.modules))\n")
    runs = [subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, check=True, timeout=120)
            for _ in range(2)]
    assert "libcst" in runs[0].stdout  # the first run linted: the probe sees what a lint loads
    assert runs[1].stdout.strip().splitlines()[-1] == "[]"


# --- findings, exit codes and formats (engine-independent, via the size limit) -----------------

def test_findings_exit_1_and_exit_zero_overrides(cli_fast, tmp_path):
    write(tmp_path / "a.py")
    assert cli_fast("--max-file-size", "1", "a.py").returncode == 1
    assert cli_fast("--max-file-size", "1", "--exit-zero", "a.py").returncode == 0


def test_text_output_is_flake8_compatible_and_summary_goes_to_stderr(cli, tmp_path):
    write(tmp_path / "a.py")
    write(tmp_path / "b.py")
    result = cli("--max-file-size", "1", "a.py", "b.py")
    lines = result.stdout.splitlines()
    assert [FLAKE8_LINE.match(line)["path"] for line in lines] == ["a.py", "b.py"]
    assert all(FLAKE8_LINE.match(line)["code"] == "AGL000" for line in lines)
    assert "Found 2 findings in 2 files (2 files checked)." in result.stderr


def test_quiet_drops_the_summary(cli_fast, tmp_path):
    write(tmp_path / "a.py")
    result = cli_fast("--quiet", "--max-file-size", "1", "a.py")
    assert result.stdout.count("AGL000") == 1
    assert result.stderr == ""


def test_colour_only_when_asked_or_on_a_terminal(cli, tmp_path):
    write(tmp_path / "a.py")
    piped = cli("--max-file-size", "1", "a.py")
    forced = cli("--max-file-size", "1", "--color", "a.py")
    assert "\x1b[" not in piped.stdout
    assert "\x1b[" in forced.stdout
    # Colour codes wrap the path and code only; the text is the same without them.
    assert re.sub(r"\x1b\[[0-9;]*m", "", forced.stdout) == piped.stdout


def test_no_color_env_wins_over_a_terminal(monkeypatch):
    from autograd_lint import cli as cli_module

    class Terminal:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    assert cli_module._use_color(None, Terminal()) is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert cli_module._use_color(None, Terminal()) is False
    assert cli_module._use_color(True, Terminal()) is True


def test_json_matches_the_schema(cli, tmp_path):
    write(tmp_path / "a.py")
    write(tmp_path / "b.py")
    report = json_report(cli("--format", "json", "--max-file-size", "1", "a.py", "b.py"))
    assert report["summary"]["files"] == 2
    assert report["summary"]["findings"] == 2
    first = report["findings"][0]
    assert (first["path"], first["line"], first["column"], first["code"]) == ("a.py", 1, 1, "AGL000")
    assert first["name"] == "parse-error" and first["severity"] == "error"


def test_json_without_findings(cli, tmp_path):
    write(tmp_path / "ok.py")
    result = cli("--format", "json", "ok.py")
    assert result.returncode == 0
    report = json_report(result)
    assert report["findings"] == [] and report["summary"]["files"] == 1
    assert result.stderr == ""  # machine formats print no human summary


def test_statistics_counts_per_code(cli_fast, tmp_path):
    for name in "abc":
        write(tmp_path / f"{name}.py")
    result = cli_fast("--statistics", "--max-file-size", "1", ".")
    assert result.returncode == 1
    assert result.stdout.split() == ["3", "AGL000", "parse-error"]


# --- paths ---------------------------------------------------------------------------------------

def test_paths_stay_as_given(tmp_path):
    write(tmp_path / "src" / "pkg" / "b.py")
    write(tmp_path / "src" / "a.py")
    assert linted_paths(tmp_path, "src") == ["src/a.py", "src/pkg/b.py"]
    assert linted_paths(tmp_path, "./src/") == ["./src/a.py", "./src/pkg/b.py"]
    assert linted_paths(tmp_path, "src/pkg/b.py") == ["src/pkg/b.py"]
    absolute = str(tmp_path / "src" / "a.py")
    assert linted_paths(tmp_path, absolute) == [absolute]


def test_output_order_is_command_line_then_sorted(tmp_path):
    for name in ["z.py", "a.py", "m/b.py", "m/a.py"]:
        write(tmp_path / "d" / name)
    write(tmp_path / "first.py")
    assert linted_paths(tmp_path, "first.py", "d") == ["first.py", "d/a.py", "d/z.py", "d/m/a.py", "d/m/b.py"]


def test_file_given_twice_is_linted_once(tmp_path):
    write(tmp_path / "a.py")
    assert linted_paths(tmp_path, "a.py", "a.py", ".") == ["a.py"]


def test_directories_walk_only_py_files_but_named_files_always_count(tmp_path):
    write(tmp_path / "a.py")
    write(tmp_path / "stub.pyi")
    write(tmp_path / "script")
    assert linted_paths(tmp_path, ".") == ["./a.py"]
    assert linted_paths(tmp_path, "script") == ["script"]


def test_default_excludes(tmp_path):
    for skipped in [".git/x.py", ".venv/lib/y.py", "venv/y.py", "build/z.py", "dist/z.py",
                    "__pycache__/c.py", "pkg.egg-info/e.py", "node_modules/n.py", ".tox/t.py"]:
        write(tmp_path / skipped)
    write(tmp_path / "pkg" / "a.py")
    write(tmp_path / "site-packages" / "torchlike.py")  # linting installed code is allowed
    assert linted_paths(tmp_path, ".") == ["./pkg/a.py", "./site-packages/torchlike.py"]


def test_excluded_directory_named_explicitly_is_still_linted(tmp_path):
    write(tmp_path / ".venv" / "lib" / "site-packages" / "torch" / "f.py")
    write(tmp_path / ".venv" / "lib" / "site-packages" / "torch" / "build" / "g.py")
    assert linted_paths(tmp_path, ".venv/lib/site-packages/torch") == [".venv/lib/site-packages/torch/f.py"]
    assert linted_paths(tmp_path / ".venv/lib/site-packages/torch", "build/g.py") == ["build/g.py"]


def test_force_exclude_applies_the_excludes_to_named_files(tmp_path):
    """pre-commit and editors name every file: --force-exclude (ruff's) makes excludes count."""
    write(tmp_path / "build" / "b.py")
    write(tmp_path / "gen" / "g.py")
    write(tmp_path / "a.py")
    named = ["build/b.py", "gen/g.py", "a.py"]
    assert linted_paths(tmp_path, *named, "--extend-exclude", "gen") == named
    assert linted_paths(tmp_path, *named, "--extend-exclude", "gen", "--force-exclude") == ["a.py"]
    assert linted_paths(tmp_path, "gen", "--extend-exclude", "gen", "--force-exclude") == []


def test_exclude_replaces_defaults_and_extend_exclude_adds(tmp_path):
    write(tmp_path / "build" / "b.py")
    write(tmp_path / "gen" / "g.py")
    write(tmp_path / "a.py")
    assert linted_paths(tmp_path, ".", "--extend-exclude", "gen") == ["./a.py"]
    assert linted_paths(tmp_path, ".", "--exclude", "gen/") == ["./a.py", "./build/b.py"]
    assert linted_paths(tmp_path, ".", "--exclude", "gen,build", "--extend-exclude", "a.py") == []


def test_exclude_patterns_are_gitignore_style(tmp_path):
    write(tmp_path / "gen" / "top.py")
    write(tmp_path / "pkg" / "gen" / "nested.py")
    write(tmp_path / "pkg" / "test_x.py")
    write(tmp_path / "pkg" / "x.py")
    assert linted_paths(tmp_path, ".", "--extend-exclude", "/gen/") == [
        "./pkg/test_x.py", "./pkg/x.py", "./pkg/gen/nested.py"]
    assert linted_paths(tmp_path, ".", "--extend-exclude", "test_*.py,gen") == ["./pkg/x.py"]


# --- selection on the command line ---------------------------------------------------------------

def test_ignore_and_select_on_the_command_line(cli_fast, tmp_path):
    write(tmp_path / "a.py")
    assert cli_fast("--max-file-size", "1", "--ignore", "AGL000", "a.py").returncode == 0
    assert cli_fast("--max-file-size", "1", "--select", "AGL2", "a.py").returncode == 0
    assert cli_fast("--max-file-size", "1", "--select", "AGL0", "a.py").returncode == 1
    assert cli_fast("--max-file-size", "1", "--ignore", "AGL", "--extend-select", "AGL000", "a.py").returncode == 1


@pytest.mark.needs_engine
def test_buggy_function_is_reported(cli, tmp_path):
    write(tmp_path / "ops" / "bad.py", BUGGY_SOURCE)
    result = cli("ops")
    assert result.returncode == 1, result.stderr
    lines = [FLAKE8_LINE.match(line).groupdict() for line in result.stdout.splitlines()]
    found = {(line["path"], int(line["line"]), line["code"]) for line in lines}
    assert ("ops/bad.py", 5, "AGL201") in found
    assert ("ops/bad.py", 9, "AGL101") in found


@pytest.mark.needs_engine
def test_buggy_function_json_and_selection(cli_fast, tmp_path):
    write(tmp_path / "bad.py", BUGGY_SOURCE)
    report = json_report(cli_fast("--format", "json", "bad.py"))
    ctx_attr = next(f for f in report["findings"] if f["code"] == "AGL201")
    assert (ctx_attr["function_class"], ctx_attr["method"], ctx_attr["line"]) == ("Bad", "forward", 5)
    assert report["summary"]["function_classes"] == 1
    assert report["summary"]["files_with_functions"] == 1

    only_201 = json_report(cli_fast("--format", "json", "--select", "AGL201", "bad.py"))
    assert {f["code"] for f in only_201["findings"]} == {"AGL201"}
    no_2xx = json_report(cli_fast("--format", "json", "--ignore", "AGL2", "bad.py"))
    assert "AGL201" not in {f["code"] for f in no_2xx["findings"]}
    assert "AGL101" in {f["code"] for f in no_2xx["findings"]}


@pytest.mark.needs_engine
def test_buggy_function_statistics(cli, tmp_path):
    write(tmp_path / "a.py", BUGGY_SOURCE)
    write(tmp_path / "b.py", BUGGY_SOURCE)
    result = cli("--statistics", "--select", "AGL201", ".")
    assert result.returncode == 1
    assert result.stdout.split() == ["2", "AGL201", "ctx-tensor-attribute"]


@pytest.mark.needs_engine
def test_noqa_suppresses_in_the_cli_fast(cli_fast, tmp_path):
    write(tmp_path / "bad.py", BUGGY_SOURCE)
    assert cli_fast("--select", "AGL201", "bad.py").returncode == 1
    suppressed = BUGGY_SOURCE.replace("ctx.x = x", "ctx.x = x  # noqa: AGL201")
    write(tmp_path / "bad.py", suppressed)
    result = cli_fast("--select", "AGL201", "bad.py")
    assert result.returncode == 0, result.stdout
    class_line = "class Bad(torch.autograd.Function):"
    write(tmp_path / "bad.py", BUGGY_SOURCE.replace(class_line, class_line + "  # autograd-lint: disable=AGL201"))
    assert cli_fast("--select", "AGL201", "bad.py").returncode == 0


def test_clean_python_is_clean(cli, tmp_path):
    write(tmp_path / "plain.py", CLEAN_SOURCE)
    result = cli("--format", "json", "plain.py")
    assert result.returncode == 0
    assert json_report(result)["findings"] == []


# --- --explain -----------------------------------------------------------------------------------

def test_explain_prints_the_rule_page(cli):
    page = (REPO_ROOT / "rules" / "AGL201.md").read_text(encoding="utf-8")
    result = cli("--explain", "AGL201")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == page.strip()
    assert cli("--explain", "agl201").stdout == result.stdout
    assert cli("--explain", "ctx-tensor-attribute").stdout == result.stdout


def test_explain_unknown_code_lists_the_valid_ones(cli):
    result = cli("--explain", "AGL999")
    assert result.returncode == 2
    assert "unknown rule 'AGL999'" in result.stderr and "AGL201" in result.stderr
    assert_no_traceback(result)


def test_explain_code_without_a_page(monkeypatch, tmp_path):
    from autograd_lint import explain

    monkeypatch.setattr(explain, "PAGE_DIRS", (tmp_path,))
    with pytest.raises(explain.ExplainError, match="AGL201 .* has no rule page yet"):
        explain.explain("AGL201", sys.stdout)


def test_plain_name_excludes_match_exactly_as_pathspec_does():
    """The default excludes are matched by name, without pathspec: same answers on every path
    built from names near them, as files and as directories, at any depth."""
    import itertools

    import pathspec

    from autograd_lint.discovery import DEFAULT_EXCLUDE, Excludes

    names = ["a", "src", "build", "builds", "rebuild", "x.egg-info", "egg-info", ".egg-info", "env", ".env",
             "env.py", "venv", ".venv", "node_modules", "__pycache__", "dist", "a.py", ".git", "git"]
    for patterns in (list(DEFAULT_EXCLUDE), ["build", "*.egg-info"], ["*_pb2.py", "generated"]):
        ours, theirs = Excludes(patterns), pathspec.GitIgnoreSpec.from_lines(patterns)
        assert ours.by_name
        for depth in (1, 2, 3):
            for parts in itertools.product(names, repeat=depth):
                for path in ("/".join(parts), "/".join(parts) + "/"):
                    assert ours.match_file(path) == theirs.match_file(path), (patterns, path)


def test_excludes_with_slashes_or_negations_go_to_pathspec(tmp_path):
    from autograd_lint.discovery import Excludes, discover

    for patterns in (["tests/fixtures"], ["build", "!build/keep.py"], ["/top.py"], ["a?c"], ["**/gen"]):
        assert not Excludes(patterns).by_name, patterns
    (tmp_path / "tests" / "fixtures").mkdir(parents=True)
    (tmp_path / "tests" / "fixtures" / "f.py").write_text("x = 1\n")
    (tmp_path / "tests" / "t.py").write_text("x = 1\n")
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "kept.py").write_text("x = 1\n")
    found = discover([str(tmp_path)], Excludes(["tests/fixtures"]), str(tmp_path))
    assert sorted(os.path.relpath(f, tmp_path) for f in found.files) == ["fixtures/kept.py", "tests/t.py"]
