#!/usr/bin/env python3
"""What judging a file with its whole project's facts costs a single-file run.

Three measurements, each the median (and minimum) of N runs of the real commands:

1. ``autograd-lint FILE`` for a file of a large project (default: this interpreter's installed
   torch, a project by its outermost package) against the same file copied into an empty
   directory (no project), the index warm: once with the file unchanged (the run memo answers),
   once with the file edited before each run (its lint runs, the project's facts come from the
   index);
2. ``flake8 --select AGL -`` with ``--stdin-display-name FILE`` (what an editor runs on every
   change), in the project and out of it, the index warm;
3. a project of 10,000 modules that never mention Function plus one file that defines a
   Function class: the first run (the text pre-check of every file, once) and the next ones.

Usage: python bench/project_cost.py [--project DIR --file REL] [--rounds N] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], cwd: Path, rounds: int, before=None, stdin: bytes = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    times = []
    for _ in range(rounds):
        if before is not None:
            before()
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, env=env, input=stdin, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return {"median_s": round(statistics.median(times), 4), "min_s": round(min(times), 4)}


def appender(path: Path):
    def append() -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("\n")
    return append


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--project", type=Path)
    parser.add_argument("--file", default="autograd/function.py")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.project is None:
        import importlib.util

        args.project = Path(importlib.util.find_spec("torch").origin).parent
    report: dict = {"project": str(args.project), "file": args.file, "rounds": args.rounds}
    cli = [sys.executable, "-m", "autograd_lint", "-q"]
    flake8 = [sys.executable, "-m", "flake8", "--select", "AGL", "--stdin-display-name"]
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        # The edited-file runs change the project's file: work on a copy of the project.
        project = scratch / args.project.name
        shutil.copytree(args.project, project, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.a", "lib"))
        target = project / args.file
        alone = scratch / "alone" / target.name
        alone.parent.mkdir()
        shutil.copy2(target, alone)
        text = target.read_bytes()
        start = time.perf_counter()
        subprocess.run(cli + [str(target)], cwd=scratch, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                       capture_output=True, check=False)
        report["cli_cold_index_s"] = round(time.perf_counter() - start, 3)
        for label, path in (("in_project", target), ("alone", alone)):
            report[f"cli_{label}_unchanged"] = timed(cli + [str(path)], scratch, args.rounds)
            report[f"cli_{label}_edited"] = timed(cli + [str(path)], scratch, args.rounds, before=appender(path))
            report[f"flake8_stdin_{label}"] = timed(flake8 + [str(path), "-"], scratch, args.rounds, stdin=text)

        big = scratch / "no_function"
        for d in range(100):
            (big / f"pkg{d}").mkdir(parents=True)
            for i in range(100):
                (big / f"pkg{d}" / f"m{i}.py").write_text(f"import os\n\n\ndef f(x):\n    return os.path.join(x, 'a') * {i}\n")
        (big / "ops.py").write_text((REPO_ROOT / "fixtures" / "fixes" / "AGL101" / "safe.py").read_text())
        subprocess.run(["git", "init", "-q"], cwd=big, check=True)
        start = time.perf_counter()
        subprocess.run(cli + ["ops.py"], cwd=big, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                       capture_output=True, check=False)
        report["no_function_10k_first_run_s"] = round(time.perf_counter() - start, 3)
        report["no_function_10k_edited"] = timed(cli + ["ops.py"], big, args.rounds, before=appender(big / "ops.py"))
        (big / ".git").rename(big / ".git-away")  # the same file, of no project
        report["no_function_alone_edited"] = timed(cli + ["ops.py"], big, args.rounds, before=appender(big / "ops.py"))
    text_report = json.dumps(report, indent=2)
    print(text_report)
    if args.out:
        args.out.write_text(text_report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
