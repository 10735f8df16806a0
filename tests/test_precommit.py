"""The pre-commit hook, through the real pre-commit and real ``git commit``.

A user's ``.pre-commit-config.yaml`` names this repository and a revision; pre-commit clones it,
reads ``.pre-commit-hooks.yaml``, builds a virtualenv and pip-installs the package into it. The
tests do exactly that with a snapshot of the working tree (tracked and new files, what a commit of
it would hold) as the repository, so they check the hook file as it is now, committed or not.

Slow part: pre-commit's install (a virtualenv, then pip from the package registry), done once
per session in a shared ``PRE_COMMIT_HOME``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUGGY_SOURCE, CLEAN_SOURCE, REPO_ROOT, write

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "autograd-lint tests", "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "autograd-lint tests", "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    # The user's git configuration (hooksPath, signing, templates) must not change what runs.
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="session")
def environment(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("pre-commit-home")
    return {**os.environ, **GIT_IDENTITY, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory, environment) -> tuple[Path, str]:
    """A git repository holding the working tree as a commit: (path, revision)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\0")
    snapshot = tmp_path_factory.mktemp("autograd-lint-repo")
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file():  # deleted but not yet committed: leave it out, as a commit would
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, snapshot / name)
    assert (snapshot / ".pre-commit-hooks.yaml").is_file()
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "snapshot")):
        assert git(*args, cwd=snapshot, env=environment).returncode == 0
    revision = git("rev-parse", "HEAD", cwd=snapshot, env=environment).stdout.strip()
    return snapshot, revision


@pytest.fixture
def user_repo(tmp_path: Path, hook_repo, environment) -> Path:
    """A user's project with the hook configured and installed as git's pre-commit hook."""
    repo_path, revision = hook_repo
    write(tmp_path / ".pre-commit-config.yaml", (
        "repos:\n"
        f"  - repo: {repo_path}\n"
        f"    rev: {revision}\n"
        "    hooks:\n"
        "      - id: autograd-lint\n"
    ))
    assert git("init", "-q", cwd=tmp_path, env=environment).returncode == 0
    git("add", ".pre-commit-config.yaml", cwd=tmp_path, env=environment)
    assert git("commit", "-q", "--no-verify", "-m", "config", cwd=tmp_path, env=environment).returncode == 0
    installed = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=tmp_path, env=environment,
                               capture_output=True, text=True, timeout=60)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return tmp_path


def commit(repo: Path, environment: dict, *files: str) -> subprocess.CompletedProcess:
    git("add", *files, cwd=repo, env=environment)
    # The first commit of the session waits for pre-commit to build the hook's environment.
    return subprocess.run(["git", "commit", "-m", "change"], cwd=repo, env=environment,
                          capture_output=True, text=True, timeout=600)


def test_a_commit_with_a_buggy_function_fails_with_the_finding(user_repo: Path, environment):
    write(user_repo / "ops.py", BUGGY_SOURCE)
    result = commit(user_repo, environment, "ops.py")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "autograd-lint" in output and "Failed" in output
    assert "ops.py:5:9: AGL201" in output and "ops.py:9:9: AGL101" in output
    assert git("log", "--oneline", cwd=user_repo, env=environment).stdout.count("\n") == 1  # not committed


def test_a_clean_commit_passes(user_repo: Path, environment):
    write(user_repo / "ops.py", CLEAN_SOURCE)
    write(user_repo / "notes.txt", "not python\n")
    result = commit(user_repo, environment, "ops.py", "notes.txt")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "autograd-lint" in output and "Passed" in output


def test_one_run_sees_every_staged_file(user_repo: Path, environment):
    """require_serial: pre-commit would otherwise split the files (shuffled, 4 or more per
    process on a machine with 2+ cores), and a base class could be linted without its subclass."""
    write(user_repo / "base.py", (
        "import torch\n\n\nclass Base(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        ctx.scale = 2\n        return x * 2\n"
    ))
    write(user_repo / "child.py", (
        "from base import Base\n\n\nclass Child(Base):\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g * ctx.scale\n"
    ))
    fillers = [f"util_{i}.py" for i in range(6)]
    for name in fillers:
        write(user_repo / name, CLEAN_SOURCE)
    result = commit(user_repo, environment, "base.py", "child.py", *fillers)
    # Linted without child.py, base.py is a Function with no backward (AGL105).
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_projects_excludes_apply_to_staged_files(user_repo: Path, environment):
    """pre-commit names each staged file; the hook's --force-exclude keeps [tool.autograd-lint]
    exclude meaningful (a generated file with a finding does not stop the commit)."""
    write(user_repo / "pyproject.toml", '[tool.autograd-lint]\nextend-exclude = ["generated/"]\n')
    write(user_repo / "generated" / "ops.py", BUGGY_SOURCE)
    write(user_repo / "ops.py", CLEAN_SOURCE)
    result = commit(user_repo, environment, "pyproject.toml", "generated/ops.py", "ops.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_staged_base_that_breaks_an_unstaged_subclass_is_refused(user_repo: Path, environment):
    """Issue 30: a new input to a base's forward, only base.py staged. Scaled (in activations.py,
    not staged) was right before; its backward now returns one gradient for two inputs."""
    from test_dependents import ACTIVATIONS, BASE, BASE_BEFORE, SCALED_RETURN, UNRELATED

    write(user_repo / "base.py", BASE_BEFORE)
    write(user_repo / "activations.py", ACTIVATIONS)
    write(user_repo / "unrelated.py", UNRELATED)
    assert commit(user_repo, environment, "base.py", "activations.py", "unrelated.py").returncode == 0
    write(user_repo / "base.py", BASE)
    result = commit(user_repo, environment, "base.py")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    line, column = SCALED_RETURN
    assert f"activations.py:{line}:{column}: AGL101" in output
    assert "(found through base.py: its base class Activation is there)" in output
    assert git("log", "--oneline", cwd=user_repo, env=environment).stdout.count("\n") == 2  # not committed
    # A change to a file nothing depends on passes; the broken subclass is not its business.
    git("reset", "-q", "base.py", cwd=user_repo, env=environment)
    write(user_repo / "unrelated.py", UNRELATED + "\n# edited\n")
    result = commit(user_repo, environment, "unrelated.py")
    assert result.returncode == 0, result.stdout + result.stderr
