"""``--dynamic`` keeps modules apart, says what it did not check, and can fail the run on it.

The real CLI over small projects in tmp_path. The fork server (autograd_lint/dynamic/forkserver.py)
forks every module's child from one process that imported torch; these tests hold it to what one
interpreter per module gave: a module's changes to torch's global state die with its child.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_cli, write

from autograd_lint.dynamic.runner import SINGLE_THREADED_BLAS, threads_per_child

pytest.importorskip("torch")

SCALE = """\
import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
"""


def run(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, env=env, timeout=600)


@pytest.mark.parametrize("fork_server", ["1", "0"])
def test_a_module_that_changes_torchs_global_state_does_not_reach_the_next(tmp_path, fork_server):
    # Checked one after the other (-j 1), in this order (the runner keeps the file order).
    write(tmp_path / "a_changes_state.py", SCALE + """
torch.set_default_dtype(torch.float64)
torch.use_deterministic_algorithms(True)
torch.set_grad_enabled(False)
torch.manual_seed(1234)
torch.set_num_threads(1)
import os
os.environ["AUTOGRAD_LINT_TEST_LEAK"] = "1"
""")
    write(tmp_path / "b_sees_defaults.py", """\
import os

import torch

# Each line would make this module fail to import if the module before it leaked its state.
assert torch.get_default_dtype() == torch.float32, torch.get_default_dtype()
assert not torch.are_deterministic_algorithms_enabled()
assert torch.is_grad_enabled()
assert torch.initial_seed() != 1234  # each interpreter (and each fork) starts from a random seed
assert torch.get_num_threads() == int(os.environ["EXPECTED_THREADS"]), torch.get_num_threads()
assert "AUTOGRAD_LINT_TEST_LEAK" not in os.environ
assert "a_changes_state" not in __import__("sys").modules


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x ** 2
""")
    threads = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    report = tmp_path / "report.json"
    # --dynamic-env: the sandbox passes the children only what torch needs, and what is asked for.
    result = run("--dynamic", "--no-cache", "-j", "1", "--dynamic-report", str(report), "--dynamic-env",
                 "EXPECTED_THREADS", "a_changes_state.py", "b_sees_defaults.py", cwd=tmp_path,
                 env={"AUTOGRAD_LINT_DYNAMIC_FORK_SERVER": fork_server, "EXPECTED_THREADS": threads})
    entries = {entry["function_class"]: entry for entry in json.loads(report.read_text())["functions"]}
    assert entries["Cube"]["status"] == "checked", (entries["Cube"], result.stderr)
    assert {"gradcheck", "gradgradcheck"} <= set(entries["Cube"]["ran"])
    assert "b_sees_defaults.py" not in result.stdout  # Cube is right, whatever the module before it did


@pytest.fixture(scope="module")
def half_checked(tmp_path_factory) -> Path:
    """One module checked, one that fails to import, one class without inputs."""
    project = tmp_path_factory.mktemp("half_checked")
    write(project / "good.py", SCALE)
    write(project / "broken.py", "import autograd_lint_no_such_module\n\n" + SCALE.replace("Scale", "Broken"))
    write(project / "opaque.py", SCALE.replace("Scale", "Opaque").replace("def forward(ctx, x)",
                                                                         "def forward(ctx, *args)")
          .replace("return x * 2", "return args[0].mesh * 2"))
    return project


def test_the_text_output_names_every_class_it_did_not_check_and_why(half_checked):
    result = run("--dynamic", "--no-cache", ".", cwd=half_checked)
    assert result.returncode == 0, result.stderr  # not asked to require it
    assert ("autograd-lint: warning: --dynamic: ./broken.py:6: Broken: not checked: failed to import: "
            "ModuleNotFoundError: No module named 'autograd_lint_no_such_module'\n") in result.stderr
    assert "autograd-lint: warning: --dynamic: ./opaque.py:4: Opaque: not checked: could not build inputs" in result.stderr
    assert "Scale" not in result.stderr
    # Not "All checks passed": two of the three classes were never run.
    assert "No findings, but --dynamic could not check 2 of 3 Function classes (listed above; 3 files checked)." \
        in result.stderr
    assert "All checks passed" not in result.stderr
    assert "3 Function classes: 1 checked, 2 not checked (1 no-inputs, 1 import-failed; listed above)" in result.stderr


def test_require_checked_fails_the_run_from_the_command_line_or_the_config(half_checked, tmp_path):
    assert run("--dynamic", "--no-cache", "--dynamic-require-checked", ".", cwd=half_checked).returncode == 1
    assert run("--dynamic", "--no-cache", "--dynamic-require-checked", "good.py", cwd=half_checked).returncode == 0
    write(tmp_path / "pyproject.toml", "[tool.autograd-lint.dynamic]\nrequire-checked = true\n")
    write(tmp_path / "broken.py", (half_checked / "broken.py").read_text())
    result = run("--dynamic", "--no-cache", "broken.py", cwd=tmp_path)
    assert result.returncode == 1 and "broken.py:6: Broken: not checked: failed to import" in result.stderr
    write(tmp_path / "pyproject.toml", "[tool.autograd-lint.dynamic]\nrequire-checked = 1\n")
    result = run("--dynamic", "broken.py", cwd=tmp_path)
    assert result.returncode == 2 and "require-checked must be true or false; got 1" in result.stderr


def test_the_fork_server_warms_up_without_cuda_threads_or_a_changed_rng():
    """What every module's child inherits: torch and the checks loaded, nothing else changed."""
    script = """\
import os, sys, torch
from autograd_lint.dynamic import forkserver
state, seed = torch.random.get_rng_state(), torch.initial_seed()
forkserver.warm_up()
assert "sympy" in sys.modules and "torch.fx.experimental.symbolic_shapes" in sys.modules
assert torch.equal(torch.random.get_rng_state(), state) and torch.initial_seed() == seed
assert not torch.cuda.is_initialized()
assert len(os.listdir("/proc/self/task")) == 1, os.listdir("/proc/self/task")  # forking is safe
print("ok")
"""
    if not sys.platform.startswith("linux"):
        pytest.skip("the fork server is Linux only")
    # The environment the runner gives the server (runner.SINGLE_THREADED_BLAS): with numpy
    # installed, importing torch imports it, and OpenBLAS would start its threads.
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT,
                            env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin", **SINGLE_THREADED_BLAS},
                            timeout=300)
    assert result.stdout.strip() == "ok", result.stderr


def test_a_package_module_does_not_shadow_the_standard_library(tmp_path):
    """A module of a package is imported from above its top package: its siblings must not
    shadow the standard library (torch_geometric/profile/ hid `profile`, which cProfile imports,
    and its edge_index.py failed to import)."""
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "profile.py", 'raise ImportError("pkg/profile.py shadowed the standard library")\n')
    write(tmp_path / "pkg" / "ops.py", "import cProfile  # noqa: F401  (imports the standard `profile`)\n" + SCALE)
    report = tmp_path / "report.json"
    result = run("--dynamic", "--no-cache", "--dynamic-report", str(report), "pkg/ops.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (entry,) = json.loads(report.read_text(encoding="utf-8"))["functions"]
    assert (entry["function_class"], entry["status"]) == ("Scale", "checked"), entry


def test_a_module_under_namespace_directories_inside_a_package_imports_with_its_relative_imports(tmp_path):
    """`pkg/` has an `__init__.py`, `pkg/sparse/` none (a namespace package inside it), and
    `pkg/sparse/solvers/` one again: a module there whose relative imports reach `pkg` is imported
    as `pkg.sparse.solvers.ops`, not as `solvers.ops` (which failed: "attempted relative import
    beyond top-level package"); and one in a directory without `__init__.py` as well."""
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "factors.py", "FACTOR = 2\n")
    write(tmp_path / "pkg" / "sparse" / "solvers" / "__init__.py", "")
    relative = "from ...factors import FACTOR  # noqa: F401\n"
    write(tmp_path / "pkg" / "sparse" / "solvers" / "ops.py", relative + SCALE)
    write(tmp_path / "pkg" / "sparse" / "eigsh" / "more.py", relative + SCALE.replace("class Scale", "class Twice"))
    report = tmp_path / "report.json"
    result = run("--dynamic", "--no-cache", "--dynamic-report", str(report), "pkg", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    entries = {(entry["function_class"], entry["status"]) for entry in
               json.loads(report.read_text(encoding="utf-8"))["functions"]}
    assert entries == {("Scale", "checked"), ("Twice", "checked")}, entries


def test_a_namespace_package_without_any_init_imports_with_its_relative_imports(tmp_path):
    """`NsPkg/` and `NsPkg/detail/` have no `__init__.py` at all (a namespace package, as installed
    in site-packages): a module there with a relative import is imported as `NsPkg.detail.ops`
    from the project root (it failed as `ops`: "attempted relative import with no known parent
    package")."""
    write(tmp_path / "NsPkg" / "detail" / "basis.py", "FACTOR = 2\n")
    write(tmp_path / "NsPkg" / "detail" / "ops.py", "from .basis import FACTOR  # noqa: F401\n" + SCALE)
    report = tmp_path / "report.json"
    result = run("--dynamic", "--no-cache", "--dynamic-report", str(report), "NsPkg", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    entries = {(entry["function_class"], entry["status"]) for entry in
               json.loads(report.read_text(encoding="utf-8"))["functions"]}
    assert entries == {("Scale", "checked")}, entries


THREADS = """\
import os

import torch


class ReportsThreads(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        # What OpenMP reads (oneDNN's convolutions size their pool by it, whatever
        # torch.get_num_threads() says in a forked child).
        raise RuntimeError(f"threads={os.environ.get('OMP_NUM_THREADS')}")

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output
"""


def test_each_child_gets_its_share_of_the_cores_unless_the_user_sets_the_threads(tmp_path):
    # Through the fork server, the default on Linux: the variables are the server's environment,
    # which its children (and one interpreter per module, without it) inherit.
    fork_server = "1"
    # Two children at once, each with torch's default of one OpenMP thread per core, made a
    # small convolution's check 20 times slower on two cores (bench/dynamic-findings.md).
    write(tmp_path / "threads.py", THREADS)
    report = tmp_path / "report.json"

    def threads_seen(**env: str) -> str:
        run("--dynamic", "-j", "2", "--no-cache", "--dynamic-report", str(report), "threads.py", cwd=tmp_path,
            env={"AUTOGRAD_LINT_DYNAMIC_FORK_SERVER": fork_server, **env})
        (entry,) = json.loads(report.read_text(encoding="utf-8"))["functions"]
        return entry["reason"].rsplit("threads=", 1)[1].rstrip(")")

    if "OMP_NUM_THREADS" not in os.environ:
        assert threads_seen() == str(threads_per_child(2))
    assert threads_seen(OMP_NUM_THREADS="3") == "3"
