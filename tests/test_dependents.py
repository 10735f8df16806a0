"""A run of a few files (pre-commit names the staged ones) also reports what those files cause in
the other files of their project: the findings of the classes that subclass a Function class of
a given file, or whose ``.apply`` calls it holds, each message naming the given file
(``run_steps._dependent_results``). The real pre-commit case is in tests/test_precommit.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import write

# base.py after a change: forward takes a new input (`scale`), and its own backward follows.
BASE = (
    "import torch\n\n\nclass Activation(torch.autograd.Function):\n"
    "    @staticmethod\n    def forward(ctx, x, scale):\n        ctx.save_for_backward(x)\n"
    "        return x.clamp(min=0) * scale\n\n"
    "    @staticmethod\n    def backward(ctx, grad_output):\n        (x,) = ctx.saved_tensors\n"
    "        return grad_output * (x > 0), None\n"
)
BASE_BEFORE = BASE.replace("def forward(ctx, x, scale)", "def forward(ctx, x)").replace(
    " * scale\n", "\n").replace(", None\n", "\n")
# Unchanged, not given: Scaled's backward was right for forward(ctx, x); Relu inherits both.
ACTIVATIONS = (
    "from base import Activation\n\n\nclass Relu(Activation):\n    pass\n\n\n"
    "class Scaled(Activation):\n    @staticmethod\n    def backward(ctx, grad_output):\n"
    "        (x,) = ctx.saved_tensors\n        return grad_output * 2\n"
)
SCALED_RETURN = (ACTIVATIONS.count("\n"), 9)  # the line and column of Scaled's return
UNRELATED = (
    "import torch\n\n\nclass Square(torch.autograd.Function):\n"
    "    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x * x\n\n"
    "    @staticmethod\n    def backward(ctx, grad_output):\n        (x,) = ctx.saved_tensors\n"
    "        return 2 * x * grad_output\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)  # the repository is the project
    write(tmp_path / "base.py", BASE)
    write(tmp_path / "activations.py", ACTIVATIONS)
    write(tmp_path / "unrelated.py", UNRELATED)
    return tmp_path


def findings(result: subprocess.CompletedProcess) -> list[dict]:
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


def test_the_base_alone_reports_the_subclass_it_breaks_naming_itself(cli, project: Path):
    result = cli("base.py", "--no-cache")
    assert result.returncode == 1, result.stdout + result.stderr
    line, column = SCALED_RETURN
    assert result.stdout.startswith(f"activations.py:{line}:{column}: AGL101 ")
    assert "(found through base.py: its base class Activation is there)" in result.stdout
    assert result.stdout.count("AGL101") == 1  # Relu inherits a matching backward: nothing
    as_json = findings(cli("base.py", "--format", "json"))  # the cache too: cold, then warm
    assert [(f["path"], f["line"], f["code"]) for f in as_json] == [("activations.py", line, "AGL101")]
    assert findings(cli("base.py", "--format", "json")) == as_json


def test_before_the_change_nothing_is_reported(cli, project: Path):
    write(project / "base.py", BASE_BEFORE)
    result = cli("base.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_edit_of_the_base_is_seen_by_a_warm_run(cli, project: Path):
    """The second run of a few files reuses the other files' facts (engine.OthersFacts): the
    dependents are found from those facts too."""
    write(project / "base.py", BASE_BEFORE)
    assert cli("base.py").returncode == 0
    write(project / "base.py", BASE)
    result = cli("base.py")
    assert result.returncode == 1 and "activations.py" in result.stdout, result.stdout + result.stderr


def test_apply_calls_in_the_given_file_make_the_class_a_dependent(cli, project: Path):
    write(project / "use.py", "from activations import Scaled\n\n\ndef scaled(x):\n    return Scaled.apply(x, 2.0)\n")
    result = cli("use.py", "--no-cache")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "(found through use.py: .apply calls of Scaled are there)" in result.stdout


def test_a_file_nothing_depends_on_reports_only_itself(cli, project: Path):
    result = cli("unrelated.py", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_no_dependents_and_a_directory_report_only_the_files_given(cli, project: Path):
    assert cli("base.py", "--no-dependents").returncode == 0
    write(project / "ops" / "__init__.py", "")
    write(project / "ops" / "base.py", BASE)  # its own package: activations.py does not import it
    assert cli("ops").returncode == 0
