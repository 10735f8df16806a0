"""What ``--dynamic`` costs per Function class, after the module import, on the fixtures.

    python bench/dynamic_cost.py [PATH ...] [--jobs N] [--no-declared-examples]

Runs the real CLI (``--dynamic --dynamic-report``) over PATHs (default: fixtures/) and prints, from
the per-Function report: how many classes got inputs and from where, and the seconds per class
spent building inputs and running the checks (gradcheck, gradgradcheck, raw backward), without
the torch import and module import that each child pays once (about 2 s). The first class of each
child also carries about 1 s of importing sympy, which torch.autograd.grad does on its first call
with explicit gradients. The confirmation of static findings is not timed per class. Numbers vary with the machine; run it on an idle one.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["fixtures"])
    parser.add_argument("--jobs", default="2")
    parser.add_argument("--no-declared-examples", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        report_path = os.path.join(scratch, "report.json")
        command = [sys.executable, "-m", "autograd_lint", "--dynamic", "--no-cache", "-q", "-j", args.jobs,
                   "--dynamic-report", report_path, *args.paths]
        if args.no_declared_examples:
            command.append("--no-declared-examples")
        started = time.perf_counter()
        subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        wall = time.perf_counter() - started
        report = json.loads(Path(report_path).read_text(encoding="utf-8"))

    functions = report["functions"]
    built = [f for f in functions if f.get("inputs")]
    checked = [f for f in built if f.get("check_seconds") is not None]
    print(report["summary"])
    print(f"wall time: {wall:.1f} s for {len(functions)} Function classes (jobs={args.jobs}, imports included)")
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


if __name__ == "__main__":
    sys.exit(main())
