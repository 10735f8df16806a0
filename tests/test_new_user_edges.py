"""What a new user met in the trial of issue 30 (points 2 and 6), each held by a test: install
commands that work today, the help, the wheel's contents, one column convention in every format,
`--list-rules` on a terminal, `python -m autograd_lint.cli`, the runtime messages' length and
wording, and the documents saying what is true."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograd_lint.catalogue import RULES
from conftest import REPO_ROOT, run_cli, write

BUGGY = '''import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.x = x
        return x * w

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.x
'''


# --- point 2: no install command promises a release that does not exist ---------------------

def _documents() -> list[Path]:
    found = [REPO_ROOT / "README.md", REPO_ROOT / "CONTRIBUTING.md", *sorted((REPO_ROOT / "docs").glob("*.md")),
             *sorted((REPO_ROOT / "rules").glob("*.md")), *sorted((REPO_ROOT / "autograd_lint").rglob("*.py"))]
    return [path for path in found if path.is_file()]


# A requirement that names the package alone (`autograd-lint`, `'autograd-lint[dynamic]'`,
# `autograd-lint==1.0`) asks a package index for a release; `autograd-lint @ git+https://...`
# (one quoted word) and `.` do not.
_FROM_AN_INDEX = re.compile(r"^autograd[-_.]lint(\[[^\]]*\])?([=<>!~].*)?$", re.IGNORECASE)


def _install_commands(text: str) -> list[str]:
    """The arguments of each `pip install` in ``text``, up to the end of the shell command."""
    return [match.group(1) for match in re.finditer(r"pip install([^`\n;&|()#]*)", text)]


def test_no_document_or_message_tells_users_to_install_an_unpublished_release():
    offenders = []
    for path in _documents():
        for command in _install_commands(path.read_text(encoding="utf-8")):
            try:
                words = shlex.split(command)
            except ValueError:
                words = command.split()
            if any(_FROM_AN_INDEX.match(word.strip("'\"`),;")) for word in words):
                offenders.append(f"{path.relative_to(REPO_ROOT)}: pip install{command}")
    assert not offenders, "no release is published; install from a clone or a git URL:\n" + "\n".join(offenders)


def test_the_install_check_sees_what_it_forbids():
    """The check above is not blind: the commands the trial found are caught."""
    for bad in ("python3 -m pip install flake8 autograd-lint", "pip install 'autograd-lint[dynamic]'",
                "python -m pip install autograd-lint"):
        assert any(_FROM_AN_INDEX.match(w.strip("'\"")) for c in _install_commands(bad) for w in shlex.split(c))
    good = 'python -m pip install "autograd-lint @ git+https://github.com/OWNER/autograd-lint@0123abc"'
    assert not any(_FROM_AN_INDEX.match(w) for c in _install_commands(good) for w in shlex.split(c))


def test_the_readme_installs_from_a_clone_or_a_git_url_in_a_virtual_environment():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "python3 -m venv .venv && . .venv/bin/activate" in quick_start
    actions = readme.split("## GitHub Actions", 1)[1].split("\n## ", 1)[0]
    assert 'pip install "autograd-lint @ git+https://github.com/OWNER/autograd-lint@' in actions
    assert "`OWNER` and the commit are placeholders" in actions
    contributing = (REPO_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "python3 -m venv .venv" in contributing


def test_the_dynamic_error_without_torch_names_an_install_that_works(tmp_path: Path):
    """--dynamic where torch cannot be imported: exit 2, one line, a command that works."""
    write(tmp_path / "ops.py", BUGGY)
    hide_torch = tmp_path / "hide"
    write(hide_torch / "sitecustomize.py",
          "import importlib.util, sys\n"
          "_find = importlib.util.find_spec\n"
          "importlib.util.find_spec = lambda name, *a, **k: None if name == 'torch' else _find(name, *a, **k)\n")
    result = run_cli("--dynamic", "--no-cache", "ops.py", cwd=tmp_path,
                     env={"PYTHONPATH": str(hide_torch)})
    assert result.returncode == 2, result.stderr
    assert "--dynamic needs torch" in result.stderr
    assert "pip install torch rich" in result.stderr and "autograd-lint[" not in result.stderr


# --- point 6: help, wheel, formats, --list-rules, -m autograd_lint.cli ----------------------

def test_help_names_every_runtime_code_of_the_catalogue(tmp_path: Path):
    runtime = [code for code, info in RULES.items() if not info.static]
    help_text = " ".join(run_cli("--help", cwd=tmp_path).stdout.split())
    assert f"({runtime[0]}-{runtime[-1]})" in help_text, help_text
    assert "AGL901-AGL904" not in help_text


def test_help_points_at_a_dynamic_report_schema_that_exists(tmp_path: Path):
    help_text = run_cli("--help", cwd=tmp_path).stdout
    # argparse may break the path at a '-': join the help's lines back.
    joined = re.sub(r"-\n\s+", "-", re.sub(r"(?<=[^-\s])\n\s+", " ", help_text))
    match = re.search(r"its JSON schema: (\S+\.schema\.json)", joined)
    assert match, help_text
    assert Path(match.group(1)).is_file(), match.group(1)


def test_the_wheel_ships_the_dynamic_report_schema_and_the_rule_pages(tmp_path: Path):
    """A real wheel build (hatchling, as pip builds it): what `--help` and `--explain` point to is
    inside it."""
    try:
        import hatchling  # noqa: F401
        isolation = ["--no-build-isolation"]
    except ImportError:
        isolation = []  # pip fetches the build backend, as any install from a clone does
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q",
                            "--wheel-dir", str(tmp_path), str(REPO_ROOT)],
                           capture_output=True, text=True, timeout=600)
    if build.returncode != 0 and not isolation and "hatchling" in build.stderr:
        pytest.skip(f"the build backend could not be fetched: {build.stderr[-500:]}")
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = tmp_path.glob("autograd_lint-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "autograd_lint/schemas/dynamic-report.schema.json" in names, sorted(names)[:20]
    assert "autograd_lint/rule_pages/AGL101.md" in names
    shipped = json.loads(zipfile.ZipFile(wheel).read("autograd_lint/schemas/dynamic-report.schema.json"))
    assert shipped == json.loads((REPO_ROOT / "docs" / "dynamic-report.schema.json").read_text(encoding="utf-8"))


def test_every_format_gives_a_finding_the_same_columns(tmp_path: Path):
    """One convention: 1-based columns, an exclusive end, in JSON, SARIF, github and text."""
    write(tmp_path / "ops.py", BUGGY)

    def report(fmt: str) -> str:
        return run_cli("--no-cache", "--format", fmt, "ops.py", cwd=tmp_path).stdout

    findings = json.loads(report("json"))["findings"]
    finding = next(f for f in findings if f["code"] == "AGL201")
    assert finding["end_line"] == finding["line"] and finding["end_column"] > finding["column"]
    source_line = BUGGY.splitlines()[finding["line"] - 1]
    # Exclusive: the span is source_line[column - 1 : end_column - 1] (here `ctx.x = x` or a part).
    span = source_line[finding["column"] - 1: finding["end_column"] - 1]
    assert span and span == span.strip() and source_line.strip().startswith(span[:3]), span

    sarif = json.loads(report("sarif"))
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "AGL201")
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == (
        finding["line"], finding["column"], finding["end_line"], finding["end_column"])

    github = next(line for line in report("github").splitlines() if "AGL201" in line)
    properties = dict(item.split("=", 1) for item in github.split(" ", 1)[1].split("::", 1)[0].split(","))
    assert (int(properties["line"]), int(properties["col"]), int(properties["endLine"]),
            int(properties["endColumn"])) == (finding["line"], finding["column"], finding["end_line"],
                                              finding["end_column"])

    text = next(line for line in report("text").splitlines() if "AGL201" in line)
    assert text.startswith(f"ops.py:{finding['line']}:{finding['column']}: AGL201")

    documented = (REPO_ROOT / "docs" / "json-schema.md").read_text(encoding="utf-8")
    assert "exclusive" in documented and "`--format github`" in documented


def test_list_rules_fits_a_terminal(tmp_path: Path):
    result = run_cli("--list-rules", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    for code, info in RULES.items():  # the summary is all there, wrapped
        assert " ".join(info.summary.split()) in " ".join(result.stdout.split()), code


def test_python_m_autograd_lint_cli_runs_the_command(tmp_path: Path):
    write(tmp_path / "ops.py", BUGGY)
    result = subprocess.run([sys.executable, "-m", "autograd_lint.cli", "--no-cache", "ops.py"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 1, result.stderr
    assert "ops.py:7:9: AGL201" in result.stdout


def test_the_documents_say_what_is_true():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "(text only)" not in readme and "--list-rules" in readme
    contributing = (REPO_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "docs/architecture.md" in contributing and (REPO_ROOT / "docs" / "architecture.md").is_file()
    assert "architecture is described in the module\ndocstrings" not in contributing


# --- point 6: the runtime findings' messages ------------------------------------------------

# (torch is imported per test: the rest of this file needs none)


def test_agl906_message_is_one_short_line():
    torch = pytest.importorskip("torch")
    from autograd_lint.dynamic.autocast_check import MESSAGE_LIMIT, autocast_failure

    class LinearUndecorated(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight):
            ctx.save_for_backward(x, weight)
            return x @ weight

        @staticmethod
        def backward(ctx, grad_output):
            x, weight = ctx.saved_tensors
            return grad_output @ weight.t(), x.t() @ grad_output

    def make_inputs():
        return (torch.randn(3, 4, dtype=torch.float64, requires_grad=True),
                torch.randn(4, 5, dtype=torch.float64, requires_grad=True))

    failure = autocast_failure(LinearUndecorated, make_inputs)
    assert failure is not None and not failure.declares_autocast
    message = f"LinearUndecorated: {failure.message}"
    assert len(message) <= MESSAGE_LIMIT <= 300, (len(message), message)
    assert "\n" not in message
    assert "backward raised RuntimeError: expected m1 and m2 to have the same dtype" in message
    assert "decorate forward with @torch.amp.custom_fwd" in message


def test_agl908_names_a_documented_straight_through_clamp_by_its_documentation():
    torch = pytest.importorskip("torch")
    from autograd_lint.dynamic.by_design import explain_failure

    x = torch.tensor([-2.0, -0.5, 0.25, 0.75, 3.0], dtype=torch.float64, requires_grad=True)
    analytical = torch.eye(5, dtype=torch.float64)  # backward passes the gradient through
    numerical = torch.diag((x.detach().abs() < 1).double())  # forward's clamp: zero outside [-1, 1]
    explained = explain_failure(StraightThroughClamp, lambda: (x,), ["x"], StraightThroughClamp.apply,
                                {0: (analytical, numerical)})
    assert explained is not None
    assert "sign estimator" not in explained.message, explained.message
    assert 'its documentation says "straight-through"' in explained.message, explained.message


def _straight_through_clamp():
    try:
        import torch
    except ImportError:
        return None

    class StraightThroughClamp(torch.autograd.Function):
        """Clamp to [-1, 1] with a straight-through estimator: the gradient passes unchanged."""

        @staticmethod
        def forward(ctx, x):
            return x.clamp(-1, 1)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    return StraightThroughClamp


StraightThroughClamp = _straight_through_clamp()


# --- point 4: a class whose base the run cannot see is not skipped without a word -------------

BASE = '''import torch


class ScaledFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x * scale

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None
'''

ACTIVATIONS = '''import torch
from torch import nn

from .base import ScaledFunction


class Gelu(ScaledFunction):
    @staticmethod
    def forward(ctx, x, scale, approximate):
        ctx.scale = scale
        return torch.nn.functional.gelu(x) * scale

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale


class Block(nn.Module):
    pass
'''


def _project(tmp_path: Path) -> Path:
    write(tmp_path / "pyproject.toml", "[tool.autograd-lint]\n")
    write(tmp_path / "mylib" / "__init__.py", "")
    write(tmp_path / "mylib" / "base.py", BASE)
    write(tmp_path / "mylib" / "activations.py", ACTIVATIONS)
    return tmp_path


def _stdin(args: list[str], text: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], input=text, cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})


def test_stdin_without_its_file_name_gives_a_notice_naming_the_base_and_the_option(tmp_path: Path):
    root = _project(tmp_path)
    result = _stdin(["-m", "autograd_lint", "--no-cache", "-"], ACTIVATIONS, root)
    assert result.returncode == 1, (result.stdout, result.stderr)
    (line,) = result.stdout.splitlines()  # one line: the notice; nn.Module's subclass is left alone
    assert line.startswith("-:7:1: AGL002 Gelu is not checked: its base ScaledFunction comes from `.base."), line
    assert "--stdin-filename PATH" in line and "project root" in line
    # Named, the file is found in its package: Gelu is checked (its backward returns 1 gradient
    # for 3 inputs), and no notice.
    named = _stdin(["-m", "autograd_lint", "--no-cache", "-", "--stdin-filename", "mylib/activations.py"],
                   ACTIVATIONS, root)
    assert "AGL002" not in named.stdout and "AGL101" in named.stdout, named.stdout


def test_a_file_copied_alone_gives_the_notice(tmp_path: Path):
    alone = write(tmp_path / "scratch" / "activations.py", ACTIVATIONS)
    result = run_cli("--no-cache", "activations.py", cwd=alone.parent)
    assert result.returncode == 1, result.stderr
    assert "activations.py:7:1: AGL002 Gelu is not checked" in result.stdout
    assert "Block" not in result.stdout
    info = json.loads(run_cli("--no-cache", "--format", "json", "activations.py", cwd=alone.parent).stdout)
    assert [(f["code"], f["severity"]) for f in info["findings"]] == [("AGL002", "info")]


def test_flake8_on_stdin_shows_the_same_notice(tmp_path: Path):
    pytest.importorskip("flake8")
    alone = tmp_path / "scratch"
    alone.mkdir()
    text = ACTIVATIONS.replace("ScaledFunction", "ScaledBase")  # no "Function" in the text at all
    result = _stdin(["-m", "flake8", "--select", "AGL", "-"], text, alone)
    assert result.returncode == 1, (result.stdout, result.stderr)
    (line,) = result.stdout.splitlines()
    assert line.startswith("stdin:7:1: AGL002 Gelu is not checked: its base ScaledBase comes from `.base."), line


def test_a_library_base_gets_no_notice(tmp_path: Path):
    text = ("from torch import nn\nfrom somelib import SomeLibBase\nimport torch\n\n\n"
            "class Foo(nn.Module):\n    pass\n\n\nclass X(SomeLibBase):\n    pass\n\n\n"
            "class Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x\n\n"
            "    @staticmethod\n    def backward(ctx, g):\n        return g\n")
    result = _stdin(["-m", "autograd_lint", "--no-cache", "-"], text, tmp_path)
    assert result.returncode == 0 and not result.stdout, (result.stdout, result.stderr)
