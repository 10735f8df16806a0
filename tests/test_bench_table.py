"""bench/run.py --readme: the README's speed table is written from a run's results, between its
markers, and nothing else of the README changes."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import run  # noqa: E402  (bench/ is not a package)


def _row(seconds: float, peak: float = 50.0, runs=None) -> dict:
    return {"median_s": seconds, "runs_s": runs or [seconds], "peak_mb": peak}


RESULTS = {
    "trees": [
        {"tree": "/scratch/torch", "files": 2285, "megabytes": 46.4, "rows": {
            "ruff check (default rules)": _row(1.30, 99),
            "autograd-lint cold": _row(1.04, 190),
            "autograd-lint cold (base 66cfb9d)": _row(1.30, 190),
            "autograd-lint warm": _row(0.08, 14),
            "flake8 (default checks)": _row(150.0, 237, [150.0, 148.0]),
            "flake8 + autograd-lint plugin": _row(153.0, 295, [153.0, 149.48]),
        }},
        {"tree": "/scratch/kornia", "files": 507, "megabytes": 6.3, "rows": {
            "ruff check (default rules)": _row(0.40),
            "autograd-lint cold": _row(0.80),
            "autograd-lint warm": _row(0.12),
        }},
    ],
}


def test_table_has_each_tree_with_ratios_to_ruff_and_the_pairings():
    table = run.readme_table(RESULTS)
    lines = table.splitlines()
    assert lines[0] == "| command | torch: s | × ruff | peak MB | kornia: s | × ruff |"
    assert "| files (MB) | 2,285 (46) |  |  | 507 (6.3) |  |" in lines
    assert "| **autograd-lint cold** | 1.04 | **0.80** | 190 | 0.80 | **2.00** |" in lines
    # a command one tree lacks leaves its cells empty
    assert "| autograd-lint cold (base 66cfb9d) | 1.30 | 1.00 | 190 |  |  |" in lines
    assert "torch this/base: autograd-lint cold: 0.80x" in lines
    assert "torch flake8 with/without 1.020 [1.020, 1.010]" in lines


def test_written_between_the_markers_only(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n\n<!-- bench-table:start -->\nold table\n<!-- bench-table:end -->\n\nAfter.\n",
                      encoding="utf-8")
    run.write_readme_table(readme, RESULTS)
    text = readme.read_text(encoding="utf-8")
    assert "old table" not in text
    assert text.startswith("# Title\n\n<!-- bench-table:start -->\n| command | torch: s |")
    assert text.endswith("<!-- bench-table:end -->\n\nAfter.\n")
    assert run.readme_table(RESULTS) in text
