"""The evaluation set: 145 Function classes written from the rule pages (rules/) alone, without
looking at the implementation (17 modules under ``fixtures/evaluation``; 71 clean classes with
tricky near-misses, 74 with one or two bugs each). It is how precision and recall were
measured; kept here so they cannot regress. The CLI must report exactly the ``# expect:``
markers."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import REPO_ROOT, run_cli

EVALUATION = REPO_ROOT / "fixtures" / "evaluation"
MARKER = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


def expected() -> set[tuple[str, int, str]]:
    found = set()
    for path in sorted(EVALUATION.glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = MARKER.search(line)
            if match:
                found |= {(path.name, number, code) for code in re.split(r"[ ,]+", match.group(1).strip()) if code}
    return found


def test_evaluation_set_precision_and_recall():
    process = run_cli("--format", "json", "--no-cache", "fixtures/evaluation", cwd=REPO_ROOT)
    reported = {(Path(f["path"]).name, f["line"], f["code"]) for f in json.loads(process.stdout)["findings"]}
    wanted = expected()
    assert len(wanted) >= 80
    false_positives, false_negatives = sorted(reported - wanted), sorted(wanted - reported)
    assert not false_positives and not false_negatives, f"FP: {false_positives}\nFN: {false_negatives}"
