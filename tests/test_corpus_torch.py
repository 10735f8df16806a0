"""Every .py file of the installed torch package: no internal error, no file we fail to read,
and the same findings however the run is made (one process or several, cold or cached).

torch is a test dependency only for its source files (static mode never imports it); the tests
skip where it is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

spec = importlib.util.find_spec("torch")  # finds the package without importing it
TORCH = Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None

pytestmark = pytest.mark.skipif(TORCH is None, reason="torch is not installed (pip install -e '.[test]' installs it)")


def lint_torch(*options: str) -> dict:
    process = subprocess.run(
        [sys.executable, "-m", "autograd_lint", "--format", "json", "--select", "ALL", *options, str(TORCH)],
        capture_output=True, text=True, timeout=600,
    )
    assert process.returncode in (0, 1), process.stderr[-3000:]
    assert "internal error" not in process.stderr, process.stderr[-3000:]
    return json.loads(process.stdout)


def as_set(report: dict) -> list[tuple]:
    return sorted((f["path"], f["line"], f["column"], f["code"], f["message"]) for f in report["findings"])


@pytest.fixture(scope="module")
def parallel_cold() -> dict:
    return lint_torch("--no-cache", "--jobs", "2")


def test_linting_all_of_torch_has_no_internal_error(parallel_cold: dict):
    assert parallel_cold["summary"]["files"] > 2000
    assert parallel_cold["summary"]["function_classes"] > 50
    assert parallel_cold["findings"], "torch's own Functions give a few findings (bench/torch-findings.md)"
    unreadable = [f for f in parallel_cold["findings"] if f["code"] == "AGL000"]
    assert unreadable == [], unreadable[:5]


def test_serial_parallel_cold_and_warm_runs_over_torch_agree(parallel_cold: dict, tmp_path: Path):
    """The fixtures' version of this test (test_jobs_and_cache.py) on a real tree: 2,000 files,
    Function classes subclassed and applied across modules, gradcheck calls in other files."""
    expected = as_set(parallel_cold)
    assert as_set(lint_torch("--no-cache", "--jobs", "1")) == expected
    cache = str(tmp_path / "cache")
    assert as_set(lint_torch("--cache-dir", cache, "--jobs", "2")) == expected  # cold: fills the cache
    assert as_set(lint_torch("--cache-dir", cache, "--jobs", "1")) == expected  # warm: the run memo
    # Another selection is another run: its per-file results come from the cache's file layers.
    narrower = as_set(lint_torch("--cache-dir", cache, "--jobs", "2", "--ignore", "AGL502"))
    assert narrower == [f for f in expected if f[3] != "AGL502"]
