"""The flake8 plugin, through the real flake8: same findings as the CLI, and flake8's own options.

The main check: ``flake8 --select AGL`` over every fixture file reports exactly what
``autograd-lint --format json FILE`` reports for that file linted alone (code, line, column):
flake8 is per file, so a lone file is the CLI's comparable run. flake8 itself runs once over all
the fixtures (with its default ``-j``), which is the same per-file work as one run per file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import BUGGY_SOURCE, REPO_ROOT, run_in_process, write

FIXTURE_FILES = sorted((REPO_ROOT / "fixtures").rglob("*.py"))
FLAKE8_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+[0-9]+) (?P<text>.*)$")


def run_flake8(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The real flake8 of this interpreter, with the repository's package first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=120,
    )


def parse(stdout: str) -> dict[str, list[tuple[str, int, int]]]:
    """path -> sorted (code, line, col) of flake8's default output format."""
    found: dict[str, list[tuple[str, int, int]]] = {}
    for line in stdout.splitlines():
        match = FLAKE8_LINE.match(line)
        assert match, f"unexpected flake8 output line: {line!r}"
        found.setdefault(match["path"], []).append((match["code"], int(match["line"]), int(match["col"])))
    return {path: sorted(items) for path, items in found.items()}


@pytest.fixture(scope="session")
def plugin_registered() -> None:
    version = run_flake8("--version", cwd=REPO_ROOT)
    assert "autograd-lint" in version.stdout, (
        "flake8 does not list the autograd-lint plugin: install the package (pip install -e .) "
        f"so its flake8.extension entry point is registered.\n{version.stdout}{version.stderr}"
    )


@pytest.fixture(scope="session")
def flake8_on_fixtures(plugin_registered) -> dict[str, list[tuple[str, int, int]]]:
    # E999 too: a file Python cannot parse is flake8's own syntax error, not a plugin finding.
    paths = [str(path.relative_to(REPO_ROOT)) for path in FIXTURE_FILES]
    result = run_flake8("--select", "AGL,E999", *paths, cwd=REPO_ROOT)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return parse(result.stdout)


def cli_alone(path: Path, tmp_path: Path) -> list[tuple[str, int, int]]:
    # --no-dependents: the file's own findings (the CLI adds, for files named alone, those of
    # classes in other files that depend on it; flake8 lints one file at a time)
    result = run_in_process("--format", "json", "--no-dependents", str(path), cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return sorted((f["code"], f["line"], f["column"]) for f in json.loads(result.stdout)["findings"])


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[str(p.relative_to(REPO_ROOT / "fixtures")) for p in FIXTURE_FILES])
def test_flake8_reports_what_the_cli_reports_for_the_file_alone(path: Path, flake8_on_fixtures, tmp_path: Path):
    expected = cli_alone(path, tmp_path)
    reported = flake8_on_fixtures.get(str(path.relative_to(REPO_ROOT)), [])
    if [code for code, _, _ in reported] == ["E999"]:
        # The CLI's AGL000 for a file Python cannot parse is flake8's E999 on the same line (flake8
        # then runs no plugin); an AGL000 on a class line (libcst cannot parse that class) is
        # the plugin's, as others.
        assert [(code, line) for code, line, _ in expected] == [("AGL000", reported[0][1])]
    else:
        assert reported == expected


def test_flake8_lists_the_plugin_with_its_version(plugin_registered):
    from autograd_lint import __version__

    assert f"autograd-lint: {__version__}" in run_flake8("--version", cwd=REPO_ROOT).stdout


NOQA_SOURCE = BUGGY_SOURCE.replace("ctx.x = x\n", "ctx.x = x  # noqa: AGL201\n")


def test_noqa_is_flake8s_and_disable_noqa_shows_the_finding(plugin_registered, tmp_path: Path):
    write(tmp_path / "ops.py", NOQA_SOURCE)
    assert parse(run_flake8("--select", "AGL", "ops.py", cwd=tmp_path).stdout) == {"ops.py": [("AGL101", 9, 9)]}
    shown = parse(run_flake8("--select", "AGL", "--disable-noqa", "ops.py", cwd=tmp_path).stdout)
    assert shown == {"ops.py": [("AGL101", 9, 9), ("AGL201", 5, 9)]}


def test_flake8_select_and_extend_ignore_filter_the_codes(plugin_registered, tmp_path: Path):
    write(tmp_path / "ops.py", BUGGY_SOURCE)
    assert parse(run_flake8("--select", "AGL201", "ops.py", cwd=tmp_path).stdout) == {"ops.py": [("AGL201", 5, 9)]}
    ignored = run_flake8("--extend-ignore", "AGL201,E,W,F", "ops.py", cwd=tmp_path)
    assert parse(ignored.stdout) == {"ops.py": [("AGL101", 9, 9)]}


def test_opt_in_rules_need_their_full_code_in_flake8s_select(plugin_registered):
    path = "fixtures/AGL305/bad.py"
    by_prefix = parse(run_flake8("--select", "AGL", path, cwd=REPO_ROOT).stdout)
    assert "AGL305" not in {code for code, _, _ in by_prefix.get(path, [])}
    named = parse(run_flake8("--select", "AGL", "--extend-select", "AGL305", path, cwd=REPO_ROOT).stdout)
    expected = run_in_process("--format", "json", "--select", "AGL305", str(REPO_ROOT / path), cwd=REPO_ROOT)
    agl305 = sorted(("AGL305", f["line"], f["column"]) for f in json.loads(expected.stdout)["findings"])
    assert agl305 and [item for item in named[path] if item[0] == "AGL305"] == agl305


def test_project_wide_agl502_runs_in_flake8_with_the_projects_facts(plugin_registered, tmp_path: Path):
    # flake8 sees one file, but judges it with the facts of its project (fixtures/AGL502/, a
    # subproject of this repository): the gradcheck calls of its other files count, and it
    # reports what the CLI reports on the whole directory.
    path = "fixtures/AGL502/bad.py"
    whole = run_in_process("--format", "json", "--select", "AGL502", "fixtures/AGL502", cwd=REPO_ROOT)
    expected = sorted((f["code"], f["line"], f["column"]) for f in json.loads(whole.stdout)["findings"]
                      if f["path"] == path)
    assert expected
    assert parse(run_flake8("--select", "AGL502", path, cwd=REPO_ROOT).stdout) == {path: expected}
    # A file of no project (no settings, no repository, no package) is judged alone: AGL502 would
    # flag every Function whose test is elsewhere, and stays off.
    write(tmp_path / "bad.py", (REPO_ROOT / path).read_text(encoding="utf-8"))
    named = run_flake8("--select", "AGL502", "bad.py", cwd=tmp_path)
    assert named.returncode == 0 and named.stdout == "", named.stdout


def test_pyproject_selection_and_per_file_ignores_apply(plugin_registered, tmp_path: Path):
    write(tmp_path / "pyproject.toml", textwrap.dedent("""\
        [tool.autograd-lint]
        ignore = ["AGL101"]
        per-file-ignores = { "legacy/" = ["AGL201"] }
        unknown-key = 1
        """))
    write(tmp_path / "src" / "ops.py", BUGGY_SOURCE)
    write(tmp_path / "legacy" / "ops.py", BUGGY_SOURCE)
    result = run_flake8("--select", "AGL", "src/ops.py", "legacy/ops.py", cwd=tmp_path)
    assert parse(result.stdout) == {"src/ops.py": [("AGL201", 5, 9)]}
    assert result.stderr == ""  # unknown keys are the CLI's to report, not every editor run's


def test_bad_config_warns_once_and_keeps_the_default_rules(plugin_registered, tmp_path: Path):
    write(tmp_path / "pyproject.toml", '[tool.autograd-lint]\nselect = "AGL2"\n')
    write(tmp_path / "a.py", BUGGY_SOURCE)
    write(tmp_path / "b.py", BUGGY_SOURCE)
    result = run_flake8("--select", "AGL", "-j", "1", "a.py", "b.py", cwd=tmp_path)
    assert set(parse(result.stdout)) == {"a.py", "b.py"}
    assert result.stderr.count("select must be a list of strings") == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_toml_warns_once_and_keeps_the_default_rules(plugin_registered, tmp_path: Path):
    # Finding the settings parses the file: invalid TOML must not escape as an internal error.
    write(tmp_path / "pyproject.toml", "[tool.autograd-lint]\nselect = [\n")
    write(tmp_path / "a.py", BUGGY_SOURCE)
    result = run_flake8("--select", "AGL", "-j", "1", "a.py", cwd=tmp_path)
    assert parse(result.stdout) == {"a.py": [("AGL101", 9, 9), ("AGL201", 5, 9)]}
    assert result.stderr.count("invalid TOML") == 1 and "internal error" not in result.stderr, result.stderr


def test_stdin_as_pylsp_sends_it(plugin_registered, tmp_path: Path):
    result = run_flake8("--select", "AGL", "--stdin-display-name", "pkg/ops.py", "-", cwd=tmp_path, stdin=BUGGY_SOURCE)
    assert parse(result.stdout) == {"pkg/ops.py": [("AGL101", 9, 9), ("AGL201", 5, 9)]}


def test_parallel_and_serial_runs_agree(plugin_registered):
    paths = [str(p.relative_to(REPO_ROOT)) for p in FIXTURE_FILES if "realistic" in p.parts]
    serial = run_flake8("--select", "AGL", "-j", "1", *paths, cwd=REPO_ROOT)
    parallel = run_flake8("--select", "AGL", "-j", "2", *paths, cwd=REPO_ROOT)
    assert parallel.stdout == serial.stdout and serial.stdout


def test_a_file_without_function_classes_loads_no_analysis(tmp_path: Path):
    """What an editor pays on an ordinary file of no project: two substring searches, no libcst
    import."""
    script = textwrap.dedent("""\
        import ast, sys
        from autograd_lint.flake8_plugin import Plugin
        text = "import os\\n\\ndef f(x):\\n    return os.path.join(x, 'y')\\n"
        findings = list(Plugin(ast.parse(text), "plain.py", text.splitlines(True)).run())
        print(findings, "libcst" in sys.modules, "autograd_lint.engine" in sys.modules)
        """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert result.stdout.split() == ["[]", "False", "False"], result.stderr
    # In a project (this repository) that has Function classes, the file could subclass one of
    # them without naming Function: the project's facts (from the cache) say it does not.
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["[]", "False", "True"], result.stderr


def test_no_libcst_parse_unless_a_function_class_is_possible(monkeypatch):
    import libcst

    from autograd_lint.flake8_plugin import Plugin

    parsed: list[str] = []
    real_parse = libcst.parse_module

    def counting_parse(source, *args, **kwargs):
        parsed.append(source)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", counting_parse)
    # Mentions Function (so the engine's own text check runs) but defines no Function class.
    text = '"""Function helpers."""\nclass Config(dict):\n    pass\n\ndef Function(x):\n    return x\n'
    assert list(Plugin(None, "helpers.py", text.splitlines(True)).run()) == []
    assert parsed == []
    assert list(Plugin(None, "ops.py", BUGGY_SOURCE.splitlines(True)).run())  # the control
    assert len(parsed) == 1


def test_columns_are_not_off_by_one():
    """flake8 adds 1 to what a plugin yields: the plugin yields the 0-based column."""
    from autograd_lint.flake8_plugin import Plugin

    yielded = sorted(item[:3] for item in Plugin(None, "ops.py", BUGGY_SOURCE.splitlines(True)).run())
    assert [(line, col) for line, col, _ in yielded] == [(5, 8), (9, 8)]
    assert [text.split()[0] for _, _, text in yielded] == ["AGL201", "AGL101"]


# In a fresh interpreter, as a flake8 worker: lint a file without a Function class, then one
# with; report how many objects the garbage collector still tracks after each.
_COLLECTOR_SCRIPT = """
import ast, gc, json, sys
from autograd_lint.flake8_plugin import Plugin

def lint(name, text):
    return len(list(Plugin(ast.parse(text), name, text.splitlines(True)).run()))

plain = "class Config(dict):\\n    pass\\n"
tracked = len(gc.get_objects())
report = {"plain_findings": lint("config.py", plain), "plain_growth": len(gc.get_objects()) - tracked,
          "plain_loads_libcst": "libcst" in sys.modules}
report["findings"] = lint("ops.py", sys.argv[1])
report["growth"] = len(gc.get_objects()) - tracked
report["libcst"] = "libcst" in sys.modules
print(json.dumps(report))
"""


def test_the_loaded_analysis_is_out_of_the_garbage_collectors_sight(tmp_path: Path):
    """Loading the analysis (libcst, the rules) adds some 25,000 long-lived objects to flake8's
    process; left to the collector, every full collection walks them again (flake8 over torch:
    its collections took twice as long). Once loaded, the plugin freezes them out of its sight;
    a file that cannot hold a Function class loads nothing and changes nothing."""
    # In a directory of no project: the plain file loads nothing at all (in a project, it loads
    # the project's facts once, frozen out of the collector's sight as the analysis is).
    process = subprocess.run([sys.executable, "-c", _COLLECTOR_SCRIPT, BUGGY_SOURCE], capture_output=True,
                             text=True, timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert process.returncode == 0, process.stderr
    report = json.loads(process.stdout)
    assert report["plain_findings"] == 0 and not report["plain_loads_libcst"]
    assert report["plain_growth"] < 100
    assert report["findings"] == 2 and report["libcst"]
    assert report["growth"] < 1_000, report
