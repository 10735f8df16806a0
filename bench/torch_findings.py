#!/usr/bin/env python3
"""Lint the installed PyTorch package with autograd-lint and summarise what it finds.

PyTorch's own ``torch.autograd.Function`` subclasses are mature code, so each finding there is
either a real upstream bug or (far more often) a false positive of autograd-lint: this script is
how we look at them, and how we time a run over a large real tree (~2,300 files).

It runs the real CLI in a subprocess, exactly as a user would::

    python -m autograd_lint --format json [--select ALL] TORCH_DIR

and prints: the number of files (found on disk and reported by the CLI), files with Function
classes, Function classes, wall time, the CLI's stderr (internal errors and warnings), the number
of findings per code, then every finding as ``path:line code message``, grouped by code.

Usage (from anywhere; the repository's ``autograd_lint`` is put on PYTHONPATH)::

    python bench/torch_findings.py                        # the torch of this interpreter
    python bench/torch_findings.py PATH/site-packages/torch
    python bench/torch_findings.py --select-all --out /tmp/torch-findings.json
    python bench/torch_findings.py --max-per-code 20      # shorten the listing

torch is located with ``importlib.util.find_spec("torch")``, which finds the package without
importing it (static mode never needs torch to be importable, and importing it takes seconds).
``--python`` picks the interpreter that runs the CLI (default: this one).

Exit status: 0 when the CLI ran and produced its JSON report (whatever it found), 1 when it
failed (exit status 2, or no JSON on stdout), 2 on bad arguments (torch not found).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parent.parent


def find_torch() -> Optional[Path]:
    """The directory of the torch package visible to this interpreter, without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def torch_version(torch_dir: Path) -> str:
    """``__version__`` from torch/version.py, read as text (torch is not imported)."""
    try:
        text = (torch_dir / "version.py").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    match = re.search(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", text, re.M)
    return match.group(1) if match else "unknown"


def count_python_files(root: Path) -> int:
    return sum(1 for path in root.rglob("*.py") if "__pycache__" not in path.parts)


def run_cli(python: str, torch_dir: Path, select_all: bool) -> tuple[subprocess.CompletedProcess, float, list[str]]:
    command = [python, "-m", "autograd_lint", "--format", "json"]
    if select_all:
        command += ["--select", "ALL"]
    command.append(str(torch_dir))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    start = time.perf_counter()
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    return result, time.perf_counter() - start, command


def display_path(path: str, torch_dir: Path) -> str:
    """``torch/nn/modules/_functions.py`` rather than the full site-packages path."""
    try:
        return str(Path(path).resolve().relative_to(torch_dir.parent.resolve()))
    except ValueError:
        return path


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Lint the installed torch package with autograd-lint and summarise the findings.",
    )
    parser.add_argument("torch_dir", nargs="?", type=Path,
                        help="the torch package directory (default: found with importlib.util.find_spec)")
    parser.add_argument("--select-all", action="store_true",
                        help="pass --select ALL (opt-in rules AGL207, AGL305 and AGL502 included)")
    parser.add_argument("--out", type=Path, help="write the CLI's JSON report to this file")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter that runs the CLI (default: this one)")
    parser.add_argument("--max-per-code", type=int, default=0, metavar="N",
                        help="list at most N findings per code (default: all)")
    args = parser.parse_args(argv)

    torch_dir = args.torch_dir or find_torch()
    if torch_dir is None:
        parser.error("torch is not installed for this interpreter: give its directory as TORCH_DIR")
    torch_dir = torch_dir.resolve()
    if not (torch_dir / "__init__.py").is_file():
        parser.error(f"{torch_dir} is not a package directory (no __init__.py)")

    files_on_disk = count_python_files(torch_dir)
    result, wall, command = run_cli(args.python, torch_dir, args.select_all)

    print(f"torch {torch_version(torch_dir)} at {torch_dir}")
    print(f"command: {' '.join(command)}")
    print(f"exit status: {result.returncode}")

    stderr_lines = [line for line in result.stderr.splitlines() if line.strip()]
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        report = None
    if result.returncode not in (0, 1) or report is None:
        print("the CLI failed" + ("" if report is not None else " (no JSON report on stdout)"))
        print("stderr:")
        print("\n".join(f"  {line}" for line in stderr_lines) or "  (empty)")
        if result.stdout.strip() and report is None:
            print("stdout (start):")
            print(result.stdout[:2000])
        return 1

    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    summary = report.get("summary", {})
    findings = report.get("findings", [])
    print()
    print(f"python files on disk:   {files_on_disk}")
    print(f"files linted (CLI):     {summary.get('files')}")
    if summary.get("files") is not None and summary.get("files") != files_on_disk:
        print("  (differs from the files on disk: excludes, unreadable files or symlinks)")
    print(f"files with Functions:   {summary.get('files_with_functions')}")
    print(f"Function classes:       {summary.get('function_classes')}")
    print(f"findings:               {len(findings)}")
    print(f"time:                   {wall:.2f} s wall (CLI reports {summary.get('seconds')} s)")

    internal = [line for line in stderr_lines if "internal error" in line.lower()]
    print()
    print(f"stderr: {len(stderr_lines)} lines, {len(internal)} internal errors")
    for line in stderr_lines:
        print(f"  {line}")

    by_code: dict[str, list[dict]] = collections.defaultdict(list)
    for finding in findings:
        by_code[finding["code"]].append(finding)

    print()
    print("findings per code:")
    if not by_code:
        print("  (none)")
    for code in sorted(by_code):
        name = by_code[code][0].get("name", "")
        print(f"  {code} {name:<32} {len(by_code[code]):>5}")

    for code in sorted(by_code):
        group = sorted(by_code[code], key=lambda f: (f["path"], f["line"], f.get("column", 0)))
        shown = group[: args.max_per_code] if args.max_per_code > 0 else group
        print()
        print(f"== {code} ({len(group)})")
        for finding in shown:
            print(f"{display_path(finding['path'], torch_dir)}:{finding['line']} {code} {finding['message']}")
        if len(shown) < len(group):
            print(f"... {len(group) - len(shown)} more (see --out)")

    if args.out:
        print()
        print(f"JSON report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
