#!/usr/bin/env python3
"""What fixing costs next to linting, on one file of many Function classes (issue 30, point 7:
the goal is at most 2x).

Generates the file, then times three runs of the CLI on it, each in a fresh process:
``--no-cache -j1 --statistics FILE`` (the lint), ``--no-cache -j1 --diff --unsafe-fixes FILE``
and ``--no-cache -j1 --fix --unsafe-fixes COPY`` (on a copy, rewritten each round). Times are
CPU seconds of the child (user + system, as tests/test_scaling.py measures): the machine is
shared and wall time is noisy. Each mode runs ``--rounds`` times, in turn (lint, diff, fix,
lint, ...), and the table gives the medians and the ratios to the lint.

Two files: ``scale`` (every class ``ctx.x = x`` and a forgotten gradient: AGL201, fixable
unsafely, and AGL101, two findings a class) and ``mixed`` (the classes cycle through the other
fixable codes: AGL001, AGL101, AGL103, AGL202, AGL301, AGL304, AGL402, AGL604 next to AGL201).

Usage (from the repository root, with the package importable)::

    python bench/fix_cost.py                       # 1,000 classes, both files, 1 round
    python bench/fix_cost.py --classes 300 --rounds 3 --variant scale
    python bench/fix_cost.py --keep /tmp/fixcost   # keep the files (and the --diff output)

Exit status: 0 when every run behaved (the lint found something, --diff exits 1 and prints a
diff, --fix leaves a file that lints with fewer findings), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
GOAL = 2.0

SCALE = '''
class Scale{i}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        ctx.x = x
        return x * 2 + b

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.x
'''

# One class a kind; the file cycles through them. Each has findings of a fixable code (the
# comment says which) and most have AGL201 as well, so fixes of two codes meet in one class.
MIXED = [
    SCALE,
    '''
class Stale{i}(torch.autograd.Function):  # autograd-lint: disable=AGL204
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * 2  # noqa: AGL301

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.x
''',  # AGL001 (twice), AGL201
    '''
class OldStyle{i}(Function):
    def forward(self, x):
        y = x.exp()
        self.save_for_backward(y)
        return y

    def backward(self, grad_out):
        (y,) = self.saved_tensors
        return grad_out * y
''',  # AGL103 (twice)
    '''
class SaveDim{i}(Function):
    @staticmethod
    def forward(ctx, x, dim: int):
        ctx.save_for_backward(x, dim)
        ctx.w = x
        return x.cumsum(dim)

    @staticmethod
    def backward(ctx, grad_out):
        x, dim = ctx.saved_tensors
        return grad_out.flip(dim).cumsum(dim).flip(dim) * ctx.w, None
''',  # AGL202, AGL201
    '''
class InPlace{i}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * 2

    @staticmethod
    def backward(ctx, grad_out):
        grad_out *= ctx.x
        return grad_out
''',  # AGL301, AGL201
    '''
class SaveData{i}(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.data)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_out
''',  # AGL304
    '''
class SumZeros{i}(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.sum()

    @staticmethod
    def backward(ctx, grad_out):
        grad = torch.zeros(ctx.shape)
        return grad + grad_out
''',  # AGL402
    '''
class Amp{i}(torch.autograd.Function):
    @staticmethod
    @torch.cuda.amp.custom_fwd
    def forward(ctx, x):
        ctx.x = x
        return x * 3

    @staticmethod
    @torch.cuda.amp.custom_bwd
    def backward(ctx, grad):
        return grad * ctx.x
''',  # AGL604 (twice), AGL201
    '''
class SumDim{i}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim: int):
        ctx.x = x
        return (x * x).sum(dim)

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad * ctx.x
''',  # AGL101 (a None for dim), AGL201
]

HEADER = "import torch\nfrom torch.autograd import Function\n"


def source(variant: str, classes: int) -> str:
    templates = [SCALE] if variant == "scale" else MIXED
    return HEADER + "".join(templates[i % len(templates)].format(i=i) for i in range(classes))


def _cpu_of_run(args: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                                             os.environ.get("PYTHONPATH")]))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-m", "autograd_lint", "--no-cache", "-j1", *args], cwd=cwd,
                            env=environment, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result


def measure(variant: str, classes: int, rounds: int, folder: Path) -> tuple[dict[str, list[float]], list[str]]:
    """CPU seconds of each mode, per round, and what went wrong (empty when nothing did)."""
    text = source(variant, classes)
    big = folder / f"{variant}.py"
    big.write_text(text)
    copy = folder / f"{variant}_fixed.py"
    times: dict[str, list[float]] = {"lint": [], "diff": [], "fix": []}
    problems = []
    for _ in range(rounds):
        seconds, lint = _cpu_of_run(["--statistics", big.name], folder)
        times["lint"].append(seconds)
        if lint.returncode != 1:
            problems.append(f"{variant}: the lint exited {lint.returncode}: {lint.stderr[-300:]}")
        seconds, diff = _cpu_of_run(["--diff", "--unsafe-fixes", big.name], folder)
        times["diff"].append(seconds)
        if diff.returncode != 1 or not diff.stdout.startswith("---"):
            problems.append(f"{variant}: --diff exited {diff.returncode}: {diff.stderr[-300:]}")
        (folder / f"{variant}.diff").write_text(diff.stdout)
        copy.write_text(text)
        seconds, fix = _cpu_of_run(["--fix", "--unsafe-fixes", copy.name], folder)
        times["fix"].append(seconds)
        if copy.read_text() == text:
            problems.append(f"{variant}: --fix changed nothing: {fix.stderr[-300:]}")
    return times, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--variant", choices=["scale", "mixed", "both"], default="both")
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    args = parser.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="fix-cost-"))
    folder.mkdir(parents=True, exist_ok=True)
    variants = ["scale", "mixed"] if args.variant == "both" else [args.variant]
    failed = False
    print(f"{args.classes} classes, {args.rounds} round(s), CPU seconds (user + sys of the child), medians")
    print(f"{'file':8} {'lint':>8} {'--diff':>8} {'--fix':>8} {'diff/lint':>10} {'fix/lint':>9}")
    try:
        for variant in variants:
            times, problems = measure(variant, args.classes, args.rounds, folder)
            lint, diff, fix = (statistics.median(times[mode]) for mode in ("lint", "diff", "fix"))
            print(f"{variant:8} {lint:8.2f} {diff:8.2f} {fix:8.2f} {diff / lint:9.2f}x {fix / lint:8.2f}x"
                  f"{'' if max(diff, fix) <= GOAL * lint else f'  (goal: {GOAL:.0f}x)'}")
            for problem in problems:
                print(f"  problem: {problem}", file=sys.stderr)
            failed = failed or bool(problems)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
