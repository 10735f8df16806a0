"""Every front judges the files it is given with the facts of their whole project.

``fixtures/project_wide/`` is a package whose findings depend on other modules (base classes,
inherited forward methods, gradcheck calls in tests). The CLI on the whole directory, the CLI on
each file alone, flake8 (files one at a time, cold and warm index, and an unsaved buffer on
stdin), ``autograd-lint -`` and the pre-commit hook with a staged subset must report the same
(path, line, column, code); so must flake8 and the CLI on every fixture directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUGGY_SOURCE, REPO_ROOT
from test_precommit import commit, environment, git, hook_repo, user_repo  # noqa: F401 - fixtures
from test_pylsp import SETTINGS, LanguageServer, flake8_executable

PACKAGE = REPO_ROOT / "fixtures" / "project_wide"
MARKER = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")
FILES = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))

# A buffer of myops/activations.py that an editor has not saved: a new subclass whose backward
# returns one gradient for the two inputs of the forward it inherits from base.py.
BUFFER = (PACKAGE / "myops" / "activations.py").read_text(encoding="utf-8") + (
    "\n\nclass ScaledCube(ScaledBase):\n"
    "    @staticmethod\n"
    "    def backward(ctx, grad_out):\n"
    "        (x,) = ctx.saved_tensors\n"
    "        return grad_out * 3 * x ** 2\n"
)
BUFFER_LINE = BUFFER.count("\n")  # the last line: its return


def markers(codes_left_out: tuple[str, ...] = ()) -> set[tuple[str, int, str]]:
    found = set()
    for name in FILES:
        for number, line in enumerate((PACKAGE / name).read_text(encoding="utf-8").splitlines(), 1):
            match = MARKER.search(line)
            for code in (match.group(1).split(",") if match else ()):
                if code.strip() and code.strip() not in codes_left_out:
                    found.add((name, number, code.strip()))
    return found


def cli_findings(*args: str, cwd: Path, stdin: bytes = None) -> set[tuple[str, int, int, str]]:
    process = subprocess.run([sys.executable, "-m", "autograd_lint", "--format", "json", *args], cwd=cwd,
                             input=stdin, capture_output=True, env=_env(), timeout=120)
    assert process.returncode in (0, 1), process.stderr
    return {(f["path"].removeprefix("./"), f["line"], f["column"], f["code"])
            for f in json.loads(process.stdout)["findings"]}


def flake8_findings(*args: str, cwd: Path, stdin: str = None) -> set[tuple[str, int, int, str]]:
    process = subprocess.run([flake8_executable(), "--select", "AGL", "--format",
                              "%(path)s:%(row)d:%(col)d:%(code)s", *args], cwd=cwd, input=stdin,
                             capture_output=True, text=True, env=_env(), timeout=300)
    assert process.returncode in (0, 1), process.stderr
    found = set()
    for line in process.stdout.splitlines():
        path, row, column, code = line.rsplit(":", 3)
        found.add((path.removeprefix("./"), int(row), int(column), code))
    return found


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def without_columns(found) -> set[tuple[str, int, str]]:
    return {(path, line, code) for path, line, _, code in found}


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A copy of the package in a git repository of its own (its root: no settings file)."""
    copy = tmp_path / "project"
    shutil.copytree(PACKAGE, copy)
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    return copy


def test_the_whole_project_and_each_file_alone_give_the_markers():
    whole = cli_findings("--no-cache", "--extend-select", "AGL502", ".", cwd=PACKAGE)
    assert without_columns(whole) == markers()
    for name in FILES:
        alone = cli_findings("--no-cache", "--extend-select", "AGL502", name, cwd=PACKAGE)
        assert {f for f in alone if f[0] == name} == {f for f in whole if f[0] == name}, name
        assert alone <= whole, name  # the files that depend on it: what the whole run reports


def test_inherited_forward_across_modules_gives_agl101():
    """The issue's case: ScaledTanh's backward returns 1 gradient for the 2 inputs of the
    forward it inherits from base.py; the near miss (x's gradient, None for scale) is quiet."""
    alone = cli_findings("--no-cache", "myops/activations.py", cwd=PACKAGE)
    assert ("myops/activations.py", 12, 9, "AGL101") in alone
    assert not any(line in range(15, 22) for _, line, _, _ in alone)


def test_flake8_agrees_with_a_cold_and_a_warm_index(package: Path):
    expected = cli_findings("--no-cache", "--extend-select", "AGL502", ".", cwd=package)
    cold = flake8_findings("--extend-select", "AGL502", *FILES, cwd=package)
    assert (package / ".autograd_lint_cache").is_dir()  # the index, at the project's root
    warm = flake8_findings("--extend-select", "AGL502", *FILES, cwd=package)
    assert cold == warm == expected
    # One file at a time, as an editor runs it.
    alone = flake8_findings("myops/norms.py", cwd=package)
    assert alone == {f for f in expected if f[0] == "myops/norms.py" and f[3] != "AGL502"}


def test_an_unsaved_buffer_on_stdin_replaces_its_file(package: Path):
    name = "myops/activations.py"
    by_flake8 = flake8_findings("--stdin-display-name", name, "-", cwd=package, stdin=BUFFER)
    by_cli = cli_findings("-", "--stdin-filename", name, cwd=package, stdin=BUFFER.encode())
    assert by_flake8 == by_cli
    assert (name, BUFFER_LINE, 9, "AGL101") in by_cli  # the forward it inherits is in base.py
    (package / name).write_text(BUFFER, encoding="utf-8")  # saved: the CLI on the file agrees
    # (on the file: stdin's text is linted alone, without the files that depend on it)
    assert cli_findings("--no-cache", "--no-dependents", name, cwd=package) == by_cli


def test_stdin_options(package: Path):
    name = "myops/activations.py"
    text = (package / name).read_bytes()
    assert cli_findings("-", "--stdin-filename", name, cwd=package, stdin=text) == cli_findings(
        "--no-cache", "--no-dependents", name, cwd=package)
    # Binary input: the AGL000 of a binary file.
    (package / "binary.py").write_bytes(b"x = 1\x00\n")
    from_file = cli_findings("--no-cache", "binary.py", cwd=package)
    from_stdin = cli_findings("-", "--stdin-filename", "binary.py", cwd=package, stdin=b"x = 1\x00\n")
    assert from_stdin == from_file and {code for *_, code in from_file} == {"AGL000"}
    dynamic = subprocess.run([sys.executable, "-m", "autograd_lint", "--dynamic", "-"], cwd=package, input=text,
                             capture_output=True, env=_env(), timeout=60)
    assert dynamic.returncode == 2 and b"--dynamic" in dynamic.stderr and b"stdin" in dynamic.stderr
    # --fix: the fixed text on stdout (the bytes --fix writes into a file), the findings left
    # on stderr; no file is written.
    case = REPO_ROOT / "fixtures" / "fixes" / "AGL101" / "safe.py"
    buggy = case.read_bytes()
    fixed = subprocess.run([sys.executable, "-m", "autograd_lint", "--fix", "-", "--stdin-filename", "ops.py"],
                           cwd=package, input=buggy, capture_output=True, env=_env(), timeout=60)
    assert fixed.returncode in (0, 1), fixed.stderr
    assert fixed.stdout == case.with_name("safe.fixed.py").read_bytes()
    assert b"AGL101" not in fixed.stderr and not (package / "ops.py").exists()
    left = subprocess.run([sys.executable, "-m", "autograd_lint", "--fix", "-", "--stdin-filename", "ops.py"],
                          cwd=package, input=BUGGY_SOURCE.encode(), capture_output=True, env=_env(), timeout=60)
    assert left.returncode == 1 and left.stdout == BUGGY_SOURCE.encode()
    assert b"ops.py:5:9: AGL201" in left.stderr
    diff = subprocess.run([sys.executable, "-m", "autograd_lint", "--diff", "-", "--stdin-filename", "ops.py"],
                          cwd=package, input=buggy, capture_output=True, env=_env(), timeout=60)
    assert diff.returncode == 1 and diff.stdout.startswith(b"--- a/ops.py")


def test_every_fixture_directory_flake8_agrees_with_the_cli():
    """flake8 sees one file at a time; with the project facts it reports what the CLI reports
    on the whole directory (AGL000 aside: flake8 reports E999 for a file it cannot parse)."""
    directories = sorted(p for p in (REPO_ROOT / "fixtures").glob("AGL*") if p.is_dir()) + [PACKAGE]
    names = [p.relative_to(REPO_ROOT).as_posix() for d in directories for p in sorted(d.rglob("*.py"))]
    by_cli = set()
    for directory in directories:
        by_cli |= cli_findings(directory.relative_to(REPO_ROOT).as_posix(), cwd=REPO_ROOT)
    by_flake8 = flake8_findings(*names, cwd=REPO_ROOT)
    assert {f for f in by_flake8 if f[3] != "AGL000"} == {f for f in by_cli if f[3] != "AGL000"}


@pytest.mark.parametrize("directory", ["AGL101", "AGL104", "AGL105", "AGL206"])
def test_each_file_of_a_multi_module_fixture_alone_agrees_with_its_directory(directory: str):
    root = REPO_ROOT / "fixtures" / directory
    whole = cli_findings(f"fixtures/{directory}", cwd=REPO_ROOT)
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(REPO_ROOT).as_posix()
        alone = cli_findings(name, cwd=REPO_ROOT)
        assert {f for f in alone if f[0] == name} == {f for f in whole if f[0] == name}, name
        assert alone <= whole, name  # the files that depend on it (tests/test_dependents.py)


def test_precommit_with_a_staged_subset(user_repo: Path, environment):  # noqa: F811 - fixtures
    for name in FILES:
        (user_repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PACKAGE / name, user_repo / name)
    (user_repo / "pyproject.toml").write_text('[tool.autograd-lint]\nextend-select = ["AGL502"]\n')
    git("add", "-A", cwd=user_repo, env=environment)
    assert git("commit", "-q", "--no-verify", "-m", "package", cwd=user_repo, env=environment).returncode == 0
    # A change to the subclasses' module only: base.py (their forward) and the tests (the
    # gradcheck calls) are not staged, and count all the same.
    name = "myops/activations.py"
    with open(user_repo / name, "a", encoding="utf-8") as handle:
        handle.write("\n# edited\n")
    result = commit(user_repo, environment, name)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    reported = {(path, int(line), code) for path, line, code in
                re.findall(r"^(myops/[\w/]+\.py):(\d+):\d+: (AGL\d+)", output, re.MULTILINE)}
    # And norms.py, not staged: its classes derive from one of activations.py (the AGL502 of a
    # class that depends on a staged file is not the staged file's doing: not reported).
    assert reported == {m for m in markers() if m[0] == name or (m[0] == "myops/norms.py" and m[2] != "AGL502")}, output
    assert "(found through myops/activations.py: its base class ScaledTanhChecked is there)" in output


def test_pylsp_shows_a_cross_file_finding_in_an_unsaved_buffer(package: Path):
    path = package / "myops" / "activations.py"
    server = LanguageServer(package)
    try:
        server.open_document(package, path, BUFFER, SETTINGS)
        published = server.wait_for(
            lambda m: m.get("method") == "textDocument/publishDiagnostics"
            and any(d["range"]["start"]["line"] == BUFFER_LINE - 1 for d in m["params"]["diagnostics"]),
            "publishDiagnostics with the buffer's AGL101",
        )
    finally:
        server.close()
    codes = {(d["range"]["start"]["line"] + 1, d["code"]) for d in published["params"]["diagnostics"]}
    assert (BUFFER_LINE, "AGL101") in codes and (12, "AGL101") in codes


def test_the_plugin_loads_a_project_once_for_all_its_directories(package: Path, monkeypatch):
    """A project without settings: every directory of it is the same project, gathered once
    per process (a load per directory made flake8 over torch 15x slower)."""
    import ast

    import autograd_lint.engine as engine
    from autograd_lint import flake8_plugin

    loads = []
    real = engine.gather_project

    def counting(*args, **kwargs):
        loads.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "gather_project", counting)
    for cache in (flake8_plugin._project, flake8_plugin._config_for, flake8_plugin._may_have_a_project):
        cache.cache_clear()
    found = {}
    for name in FILES:
        text = (package / name).read_text(encoding="utf-8")
        plugin = flake8_plugin.Plugin(ast.parse(text), str(package / name), text.splitlines(True))
        found[name] = sorted((line, message.split()[0]) for line, _, message, _ in plugin.run())
    assert len(loads) == 1
    assert found["myops/activations.py"] == [(12, "AGL101"), (27, "AGL201")]
    assert found["myops/norms.py"] == [(12, "AGL101")]


def test_a_file_edited_again_is_judged_with_its_projects_facts_without_rereading_them(package: Path):
    """A run of a few files of a project whose other files are unchanged reuses those files' facts
    (engine.OthersFacts, kept in the cache directory) and reads nothing else: each answer equals a
    run without the cache, whether the edit keeps the project's Function names (the facts are
    reused: the per-file cache is not even loaded, so not rewritten) or adds one (the whole
    project's facts are gathered again)."""
    name = "myops/activations.py"
    path = package / name
    cache_file = package / ".autograd_lint_cache" / "cache-v1.pickle"

    def same_as_without_cache() -> set:
        with_cache = cli_findings(name, cwd=package)
        assert with_cache == cli_findings("--no-cache", name, cwd=package)
        return with_cache

    first = same_as_without_cache()  # the whole gathering: the other files' facts are remembered
    assert (package / ".autograd_lint_cache" / "others-v1.pickle").is_file()
    stamp = cache_file.stat().st_mtime_ns
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert same_as_without_cache() == first
    assert cache_file.stat().st_mtime_ns == stamp  # answered from the remembered facts alone
    path.write_text(BUFFER, encoding="utf-8")  # a new Function subclass: the names change
    grown = same_as_without_cache()
    assert (name, BUFFER_LINE, 9, "AGL101") in grown - first  # the forward it inherits is in base.py
    assert cache_file.stat().st_mtime_ns != stamp  # gathered again
