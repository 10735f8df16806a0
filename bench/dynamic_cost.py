"""What ``--dynamic`` costs: the whole run, per Function class, and against what it cannot beat.

    python bench/dynamic_cost.py [PATH ...] [--jobs N] [--rounds R] [--no-declared-examples]
                                 [--dynamic-timeout S] [--compare-one-interpreter-each]
    python bench/dynamic_cost.py --generated 30 [--rounds 3]

Runs the real CLI (``--dynamic --dynamic-report``) over PATHs (default: fixtures/) ``--rounds``
times and prints the whole run's wall time (median), then, from the per-Function report of the
last round: how many classes got inputs and from where, and the seconds per class spent building
inputs and running the checks (gradcheck, gradgradcheck, raw backward, ...). With
``--compare-one-interpreter-each`` each round also runs with ``AUTOGRAD_LINT_DYNAMIC_FORK_SERVER=0``
(a fresh interpreter per module, each importing torch: how ``--dynamic`` ran before the fork
server).

``--generated N`` writes a package of N modules with one small Function each (``x * w * k``) to
a temporary directory and, in each round, measures on it:

- the whole ``--dynamic`` run;
- the floor: one bare ``python -c "import torch"`` plus the per-class seconds of that run's
  report (nothing can start the checks without importing torch, nor skip the checks);
- one process that imports torch and the N modules and runs gradcheck and gradgradcheck on each
  class (float64 inputs of shape (3, 4)): what a hand-written script would cost;

and prints the medians and the ratios. The machine's load moves every number; the ratios are
taken within one round, so compare those. Run it on an idle machine when you can.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ENVIRONMENT = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}

GENERATED_MODULE = '''import torch


class Scale{number}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w * {factor}

    @staticmethod
    def backward(ctx, grad_output):
        x, w = ctx.saved_tensors
        return grad_output * w * {factor}, grad_output * x * {factor}
'''

# One process, as a user would write it: import torch and the modules, check every class.
SINGLE_PROCESS = '''import importlib, sys
import torch
sys.path.insert(0, sys.argv[1])
for number in range(int(sys.argv[2])):
    module = importlib.import_module(f"genpkg.op{number:02d}")
    cls = getattr(module, f"Scale{number}")
    inputs = tuple(torch.randn(3, 4, dtype=torch.float64, requires_grad=True) for _ in range(2))
    assert torch.autograd.gradcheck(cls.apply, inputs)
    assert torch.autograd.gradgradcheck(cls.apply, inputs)
'''


def generate(root: Path, count: int) -> Path:
    package = root / "genpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    for number in range(count):
        (package / f"op{number:02d}.py").write_text(
            GENERATED_MODULE.format(number=number, factor=f"{number + 1}.0"), encoding="utf-8")
    return package


def timed(command: list[str], cwd: Path, environment: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=environment)
    return time.perf_counter() - started, result


def dynamic_run(paths: list[str], cwd: Path, args: argparse.Namespace, report_path: str,
                fork_server: bool = True, sandbox: str = "") -> tuple[float, dict]:
    command = [sys.executable, "-m", "autograd_lint", "--dynamic", "--no-cache", "-q", "-j", args.jobs,
               "--dynamic-report", report_path, "--dynamic-sandbox", sandbox or args.dynamic_sandbox, *paths]
    if args.no_declared_examples:
        command.append("--no-declared-examples")
    if args.dynamic_timeout:
        command += ["--dynamic-timeout", args.dynamic_timeout]
    environment = {**ENVIRONMENT, "AUTOGRAD_LINT_DYNAMIC_FORK_SERVER": "1" if fork_server else "0"}
    wall, result = timed(command, cwd, environment)
    if result.returncode not in (0, 1):
        sys.exit(f"autograd-lint failed ({result.returncode}): {result.stderr.strip()}")
    return wall, json.loads(Path(report_path).read_text(encoding="utf-8"))


def class_seconds(report: dict) -> float:
    return sum(entry["seconds"] or 0.0 for entry in report["functions"])


def compare_generated(args: argparse.Namespace) -> int:
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        generate(root, args.generated)
        report_path = str(root / "report.json")
        for _ in range(args.rounds):
            row: dict[str, float] = {}
            row["dynamic"], report = dynamic_run(["genpkg"], root, args, report_path)
            assert report["summary"]["checked"] == args.generated, report["summary"]
            row["import torch"], _ = timed([sys.executable, "-c", "import torch"], root, ENVIRONMENT)
            row["per-class checks"] = class_seconds(report)
            row["floor"] = row["import torch"] + row["per-class checks"]
            row["single process"], single = timed(
                [sys.executable, "-c", SINGLE_PROCESS, str(root), str(args.generated)], root, ENVIRONMENT)
            if single.returncode:
                sys.exit(f"the single process failed: {single.stderr.strip()}")
            if args.compare_one_interpreter_each:
                row["one interpreter each"], _ = dynamic_run(["genpkg"], root, args, report_path, fork_server=False)
            if args.compare_sandbox_off:
                row["sandbox off"], _ = dynamic_run(["genpkg"], root, args, report_path, sandbox="off")
            rows.append(row)
    median = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
    print(f"generated package: {args.generated} modules, one small Function each; --dynamic -j {args.jobs} "
          f"--dynamic-sandbox {args.dynamic_sandbox}; "
          f"median of {args.rounds} rounds (seconds)")
    for key, value in median.items():
        print(f"  {key:22} {value:7.2f}")
    ratios = {
        "--dynamic / single process": statistics.median(row["dynamic"] / row["single process"] for row in rows),
        "--dynamic / floor": statistics.median(row["dynamic"] / row["floor"] for row in rows),
    }
    if args.compare_sandbox_off:
        ratios["sandbox off / single process"] = statistics.median(row["sandbox off"] / row["single process"]
                                                                   for row in rows)
        ratios["sandbox off / floor"] = statistics.median(row["sandbox off"] / row["floor"] for row in rows)
    if args.compare_one_interpreter_each:
        ratios["one interpreter each / single process"] = statistics.median(
            row["one interpreter each"] / row["single process"] for row in rows)
    for label, value in ratios.items():
        print(f"  {label:40} {value:5.2f}x   (median of the per-round ratios)")
    return 0


def per_class(args: argparse.Namespace) -> int:
    walls, without = [], []
    with tempfile.TemporaryDirectory() as scratch:
        report_path = os.path.join(scratch, "report.json")
        for _ in range(args.rounds):
            wall, report = dynamic_run(args.paths, REPO_ROOT, args, report_path)
            walls.append(wall)
            if args.compare_one_interpreter_each:
                without.append(dynamic_run(args.paths, REPO_ROOT, args, report_path, fork_server=False)[0])
    summary = report["summary"]
    functions = report["functions"]
    print(f"{summary['function_classes']} Function classes in {summary['modules']} modules: {summary['checked']} "
          f"checked, not checked: {summary['not_checked']}; inputs: {summary['inputs']}")
    print(f"whole run: median {statistics.median(walls):.1f} s of {args.rounds} (jobs={args.jobs}, fork server)")
    if without:
        print(f"whole run: median {statistics.median(without):.1f} s of {args.rounds} (jobs={args.jobs}, "
              "one interpreter per module)")
    built = [f for f in functions if f.get("inputs")]
    checked = [f for f in built if f.get("check_seconds") is not None]
    for label, key, rows in (("building inputs", "inputs_seconds", built),
                             ("runtime checks", "check_seconds", checked),
                             ("per class, total", "seconds", built)):
        values = sorted(f[key] for f in rows if f.get(key) is not None)
        if values:
            print(f"{label:18} median {1000 * statistics.median(values):8.1f} ms   "
                  f"p90 {1000 * values[int(0.9 * (len(values) - 1))]:8.1f} ms   "
                  f"max {1000 * values[-1]:8.1f} ms   sum {sum(values):6.1f} s   (n={len(values)})")
    slowest = sorted(checked, key=lambda f: -f["check_seconds"])[:5]
    for entry in slowest:
        print(f"  slowest: {entry['path']}:{entry['line']} {entry['function_class']} "
              f"{entry['check_seconds']:.2f} s ({entry['inputs']['shapes']})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["fixtures"])
    parser.add_argument("--jobs", default=None, help="-j of the --dynamic run (default: 2; 1 with --generated)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--generated", type=int, metavar="N", default=0,
                        help="compare on a generated package of N modules (see above)")
    parser.add_argument("--compare-one-interpreter-each", action="store_true")
    parser.add_argument("--dynamic-timeout", default=None)
    parser.add_argument("--no-declared-examples", action="store_true")
    parser.add_argument("--dynamic-sandbox", choices=("auto", "require", "off"), default="auto",
                        help="the sandbox of the measured run (default: auto, as a user gets it)")
    parser.add_argument("--compare-sandbox-off", action="store_true",
                        help="with --generated: each round also runs with --dynamic-sandbox off")
    args = parser.parse_args()
    if args.generated:
        args.jobs = args.jobs or "1"  # the single process uses one core: compare like with like
        return compare_generated(args)
    args.jobs = args.jobs or "2"
    return per_class(args)


if __name__ == "__main__":
    sys.exit(main())
