#!/usr/bin/env python3
"""What the flake8 plugin adds to flake8's time: flake8 over the whole installed torch package,
with and without autograd-lint, as a ratio measured in the same run (the goal is <= 1.05x).

Both runs are the same command, ``flake8 --isolated -j auto --exit-zero --output-file F TORCH_DIR``
(flake8's default checks), started through the same small launcher; the only difference is
that the "without" launcher drops autograd-lint from the plugins flake8 finds. That is the one
reliable switch: flake8 runs every registered plugin on every file whatever ``--select`` says
(it filters results afterwards), and its ``--enable-extensions`` only concerns plugins that are
off by default. Runs alternate (without, with, without, with, ...) so drift hits both alike;
each is timed as wall time and as CPU time (user + system, worker processes included: robust
when other work shares the machine), and the table gives the medians of the rounds.

Wall and CPU times of whole flake8 runs vary by several percent from round to round on a shared
machine, more than the plugin adds. So the plugin's own work is also timed directly: one process
runs it over the same files the way flake8 calls it (flake8's ``ast`` tree and lines in hand),
timing only the plugin (CPU time, its one-time import of libcst included, which flake8 pays once
per worker); that time over the "without" runs' CPU time is the estimated ratio.

A correctness check comes free: the "with" output minus its AGL lines must equal the "without"
output, as a multiset (the plugin adds findings and changes nothing else).

Usage (from anywhere; the repository's ``autograd_lint`` is put on PYTHONPATH, and the package
must be installed, e.g. ``pip install -e .``, for flake8 to see its entry point)::

    python bench/flake8_overhead.py                       # 3 rounds over this interpreter's torch
    python bench/flake8_overhead.py --rounds 5 --out /tmp/flake8-overhead.json
    python bench/flake8_overhead.py PATH/site-packages/torch --jobs 1
    python bench/flake8_overhead.py --deselected          # also: plugin on, AGL not selected

Exit status: 0 when the runs succeeded (whatever the ratio), 1 when flake8 failed or the
outputs disagree, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.05
PLUGIN_PACKAGE = "autograd-lint"

# Runs flake8's own main(); with argv[1] == "without", first hides our plugin from its finder.
# Workers are forked from this process (flake8 hands them its loaded plugins), so they see the
# same plugin set.
LAUNCHER = f"""
import sys
from flake8.main import cli
from flake8.plugins import finder
if sys.argv.pop(1) == "without":
    find_plugins = finder.find_plugins
    finder.find_plugins = lambda *a, **k: [p for p in find_plugins(*a, **k) if p.package != {PLUGIN_PACKAGE!r}]
sys.exit(cli.main())
"""


def find_torch() -> Optional[Path]:
    """The torch package directory of this interpreter, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def flake8_command(python: str, variant: str, jobs: str, output_file: str) -> list[str]:
    """flake8 with its default checks, through the launcher: ``variant`` is "with" or "without"
    our plugin; the tree to check goes at the end (bench/run.py times the same command)."""
    return [python, "-c", LAUNCHER, variant, "--isolated", "-j", jobs, "--exit-zero", "--output-file", output_file]


def run_flake8(python: str, variant: str, torch_dir: Path, jobs: str, extra: list[str]) -> tuple[float, float, list[str]]:
    """(wall seconds, CPU seconds, output lines) of one flake8 run. CPU time (user + system, the
    worker processes included) is what the plugin costs even on a busy machine, where wall time
    also measures the neighbours."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory() as scratch:
        output = Path(scratch) / "flake8.txt"
        command = [*flake8_command(python, variant, jobs, str(output)), *extra, str(torch_dir)]
        cpu_before = _children_cpu_seconds()
        start = time.perf_counter()
        # From an empty directory: `python -c` puts the current directory first on sys.path.
        result = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        cpu_seconds = _children_cpu_seconds() - cpu_before
        if result.returncode != 0:
            raise RuntimeError(f"flake8 ({variant}) exited {result.returncode}: {result.stderr[-2000:]}")
        lines = output.read_text(encoding="utf-8", errors="replace").splitlines()
    return seconds, cpu_seconds, lines


# Times the plugin alone over every file of a tree, as flake8 calls it; prints the CPU seconds.
PLUGIN_ALONE = """
import ast, sys, time, warnings
from pathlib import Path
from autograd_lint.flake8_plugin import Plugin
warnings.simplefilter("ignore")
spent = 0.0
for path in sorted(Path(sys.argv[1]).rglob("*.py")):
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError, UnicodeDecodeError):
        continue  # flake8 reports E999 and does not run tree plugins
    start = time.process_time()
    for _ in Plugin(tree, str(path), lines).run():
        pass
    spent += time.process_time() - start
print(spent)
"""


def plugin_alone_seconds(python: str, torch_dir: Path) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run([python, "-c", PLUGIN_ALONE, str(torch_dir)], cwd=scratch, env=env,
                                capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"timing the plugin alone failed: {result.stderr[-2000:]}")
    return float(result.stdout.strip().splitlines()[-1])


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # waited-for descendants, workers included
    return usage.ru_utime + usage.ru_stime


def plugin_version(python: str) -> Optional[str]:
    result = subprocess.run([python, "-m", "flake8", "--version"], capture_output=True, text=True)
    for part in result.stdout.replace("(", ",").replace(")", ",").split(","):
        name, _, version = part.strip().partition(": ")
        if name == PLUGIN_PACKAGE:
            return version
    return None


def is_agl(line: str) -> bool:
    return ": AGL" in line


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="flake8's time over torch with and without the autograd-lint plugin.")
    parser.add_argument("torch_dir", nargs="?", type=Path, help="the torch package directory (default: this interpreter's)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each variant (default: 3)")
    parser.add_argument("--jobs", default="auto", help="flake8 -j (default: auto, one per core)")
    parser.add_argument("--deselected", action="store_true",
                        help="add a third variant: plugin registered, but --extend-ignore AGL")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs flake8 (default: this one)")
    parser.add_argument("--out", type=Path, help="write the measurements as JSON to this file")
    args = parser.parse_args(argv)

    torch_dir = (args.torch_dir or find_torch() or Path("torch-not-found")).resolve()
    if not (torch_dir / "__init__.py").is_file():
        parser.error(f"no torch package at {torch_dir}: give its directory")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    version = plugin_version(args.python)
    if version is None:
        print("flake8 does not see the autograd-lint plugin: install the package (pip install -e .)", file=sys.stderr)
        return 2

    variants = {"without": ("without", []), "with": ("with", [])}
    if args.deselected:
        variants["with, AGL ignored"] = ("with", ["--extend-ignore", "AGL"])
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu_times: dict[str, list[float]] = {name: [] for name in variants}
    outputs: dict[str, list[str]] = {}
    files = sum(1 for path in torch_dir.rglob("*.py") if "__pycache__" not in path.parts)
    print(f"flake8 over {torch_dir} ({files} .py files), -j {args.jobs}, {args.rounds} rounds, "
          f"autograd-lint {version}, {os.cpu_count()} CPUs", flush=True)
    try:
        for round_number in range(1, args.rounds + 1):
            for name, (variant, extra) in variants.items():
                seconds, cpu_seconds, lines = run_flake8(args.python, variant, torch_dir, args.jobs, extra)
                times[name].append(seconds)
                cpu_times[name].append(cpu_seconds)
                outputs.setdefault(name, lines)
                print(f"  round {round_number}: {name:<18} {seconds:7.2f} s wall {cpu_seconds:7.2f} s CPU "
                      f"({len(lines)} findings)", flush=True)
        plugin_seconds = plugin_alone_seconds(args.python, torch_dir)
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 1

    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu_times.items()}
    ratio = medians["with"] / medians["without"]
    cpu_ratio = cpu_medians["with"] / cpu_medians["without"]
    round_ratios = [w / wo for w, wo in zip(times["with"], times["without"])]
    agl_lines = [line for line in outputs["with"] if is_agl(line)]
    # As multisets: flake8 orders results by position only, and ties (two codes on one spot)
    # come out in an order that changes from run to run.
    same_otherwise = sorted(line for line in outputs["with"] if not is_agl(line)) == sorted(outputs["without"])

    print()
    print(f"{'variant':<20} {'wall median':>11} {'min':>8} {'max':>8} {'CPU median':>11} {'min':>8} {'max':>8}")
    for name, values in times.items():
        cpu = cpu_times[name]
        print(f"{name:<20} {medians[name]:10.2f}s {min(values):7.2f}s {max(values):7.2f}s "
              f"{cpu_medians[name]:10.2f}s {min(cpu):7.2f}s {max(cpu):7.2f}s")
    print()
    print(f"ratio with/without, wall (medians): {ratio:.3f}x  (per round: {', '.join(f'{r:.3f}' for r in round_ratios)}; "
          f"goal <= {GOAL:.2f}x: {'met' if ratio <= GOAL else 'NOT met'})")
    print(f"ratio with/without, CPU (medians):  {cpu_ratio:.3f}x")
    estimated = 1 + plugin_seconds / cpu_medians["without"]
    print(f"the plugin alone, timed over the same files: {plugin_seconds:.2f} s CPU; over flake8's "
          f"{cpu_medians['without']:.2f} s CPU without it, an estimated ratio of {estimated:.3f}x")
    print(f"AGL findings: {len(agl_lines)}; other findings identical with and without the plugin: {same_otherwise}")

    if args.out:
        report = {
            "torch_dir": str(torch_dir), "python_files": files, "jobs": args.jobs, "rounds": args.rounds,
            "cpus": os.cpu_count(), "python": platform.python_version(), "autograd_lint": version,
            "seconds": times, "median_seconds": medians, "ratio": ratio, "round_ratios": round_ratios,
            "cpu_seconds": cpu_times, "median_cpu_seconds": cpu_medians, "cpu_ratio": cpu_ratio,
            "plugin_alone_cpu_seconds": plugin_seconds, "estimated_ratio": estimated,
            "goal": GOAL, "goal_met": ratio <= GOAL, "agl_findings": len(agl_lines),
            "other_findings_identical": same_otherwise,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"written to {args.out}")
    return 0 if same_otherwise else 1


if __name__ == "__main__":
    sys.exit(main())
