"""Shared test helpers: running the real CLI in a subprocess, and a file the engine must flag."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# Two findings the analysis cannot miss: AGL201 on line 5, AGL101 on line 9.
BUGGY_SOURCE = textwrap.dedent(
    """\
    import torch
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.x = x
            return x * w
        @staticmethod
        def backward(ctx, g):
            return g * ctx.x
    """
)

CLEAN_SOURCE = "def add(a, b):\n    return a + b\n"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs_engine: asserts findings of the real analysis (the rules run by "
        "autograd_lint/engine.py), not only the CLI's plumbing",
    )


# The test files that take longest (tens of seconds each: the --dynamic runs over the fixtures,
# flake8 over every fixture, the hang that waits for its limit), run first. pytest-xdist's
# `--dist loadfile` hands whole files to the workers in collection order: one of these drawn last
# would leave the other worker idle for its whole length. A file missing here only loses its place.
LONGEST_FIRST = ("test_dynamic_resume.py", "test_flake8.py", "test_dynamic.py", "test_project_wide.py",
                 "test_dynamic_isolation.py", "test_jobs_and_cache.py", "test_syntax_children.py",
                 "test_server.py", "test_fix_focus.py", "test_whole_module.py", "test_dynamic_confirm_cli.py",
                 "test_sarif.py",
                 "test_dynamic_sandbox.py", "test_corpus_torch.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the others keep their order


# ``--dynamic``'s limit per child in the tests that do not test the limit itself: many times what
# a module takes (a second or so; tens on two busy cores), so that no test fails on a slow
# machine. The timeout path is tested with modules that hang for sure (tests/test_dynamic_resume.py).
WIDE_DYNAMIC_TIMEOUT = "300"


def run_cli(*args: str, cwd: Path, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``python -m autograd_lint ARGS`` as a user would, from ``cwd`` (``--dynamic`` with a
    wide limit per child unless ARGS or the project's config set one)."""
    if "--dynamic" in args and "--dynamic-timeout" not in args and not _config_sets_timeout(cwd):
        args = ("--dynamic-timeout", WIDE_DYNAMIC_TIMEOUT, *args)
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT), *filter(None, [environment.get("PYTHONPATH")])]
    )
    return subprocess.run(
        [sys.executable, "-m", "autograd_lint", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _config_sets_timeout(cwd: Path) -> bool:
    config = Path(cwd) / "pyproject.toml"
    return config.is_file() and re.search(r"^timeout\s*=", config.read_text(encoding="utf-8"), re.MULTILINE) is not None


def run_in_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``main(ARGS)`` in this process, from ``cwd``: the same code path as ``run_cli`` without
    paying for a new interpreter and the parser import on every call (keeps the suite fast)."""
    from autograd_lint.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(list(args))
    finally:
        os.chdir(previous)
    return subprocess.CompletedProcess(["autograd-lint", *args], code, stdout.getvalue(), stderr.getvalue())


@pytest.fixture
def cli(tmp_path: Path):
    """``cli(*args, cwd=tmp_path)``: run the CLI, by default in the test's temporary directory."""

    def run(*args: str, cwd: Path | None = None, env: dict | None = None):
        return run_cli(*args, cwd=cwd or tmp_path, env=env)

    return run


@pytest.fixture
def cli_fast(tmp_path: Path):
    """Like ``cli``, but calls ``main`` in this process (see ``run_in_process``)."""

    def run(*args: str, cwd: Path | None = None):
        return run_in_process(*args, cwd=cwd or tmp_path)

    return run


def write(path: Path, content: str | bytes = CLEAN_SOURCE) -> Path:
    """Create ``path`` (and its directories) with ``content``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def copy_checkout(destination: Path) -> Path:
    """Copy the checkout's files, as a clone would have them (tracked, or new and not ignored),
    to ``destination``; skips the test outside a git checkout."""
    import shutil

    proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                          cwd=REPO_ROOT, capture_output=True)
    if proc.returncode != 0:
        pytest.skip("not a git checkout")
    for name in filter(None, proc.stdout.decode().split("\0")):
        if (REPO_ROOT / name).is_file():  # a tracked file deleted in the work tree is skipped
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, destination / name)
    return destination


def free_rule_code(taken, names) -> tuple[str, str]:
    """A code and a name no rule has (``new-rule`` refuses taken ones): the highest free code,
    far from the ones a contributor adds next."""
    code = next(f"AGL{n}" for n in range(899, 99, -1) if f"AGL{n}" not in taken)
    name = next(f"scaffold-check{suffix}" for suffix in ("", *(f"-{i}" for i in range(2, 100)))
                if f"scaffold-check{suffix}" not in names)
    return code, name


def assert_no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert "Traceback" not in result.stdout, result.stdout


# --- fixture modules run under torch (tests of --dynamic, its confirmations, fixed code) ---------

def load_module(path: Path, prefix: str):
    """Import the fixture file ``path`` as a fresh module named after it."""
    name = f"_{prefix}_{path.parent.name}_{path.name.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def class_of(finding: dict, module) -> type:
    """The Function class a JSON finding is about."""
    name = finding["function_class"]
    if name is None and finding["code"] == "AGL104":  # found at the call site: the message names it
        name = re.match(r"(\w+)\(\)", finding["message"]).group(1)
    return getattr(module, name)


def function_classes(module) -> list[type]:
    """The Function classes ``module`` defines (not those it imports)."""
    import torch

    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, torch.autograd.Function)
            and value.__module__ == module.__name__]
