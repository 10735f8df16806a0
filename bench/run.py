#!/usr/bin/env python3
"""How fast is autograd-lint next to its peers, measured in one run on the same machine.

For each tree, every command is run --rounds times (flake8, 40 times slower than the rest, at
most --flake8-rounds times), the rounds going through the commands in turn, and the median wall
time is reported; then each runs once more for its peak memory (the sum of the proportional
memory of the command's whole process tree, sampled every 5 ms: never while timing, which it
would slow):

- floor: read every .py file's bytes (the least any linter must do), and `grep -r` for `Function`;
- ruff: `ruff check --no-cache` with its default rules (the speed bar of the issue);
- autograd-lint cold (`--no-cache`, all cores), cold serial (`--jobs 1`), warm (cache filled);
- flake8 (its default checks, all cores) without and with our plugin. The one reliable switch is
  to hide the plugin's entry point for the "without" runs (bench/flake8_overhead.py's launcher):
  flake8 runs every registered plugin whatever --select says. bench/flake8_overhead.py studies
  that overhead more closely (CPU time, the plugin timed alone, the other findings compared).

The trees: the installed torch package, then each of PEER_PACKAGES that is installed (published
packages with Function classes of their own; `pip install --no-deps -r bench/requirements.txt`
installs them without their dependencies, which nothing here imports). --tree replaces them.

Each tree is linted as a copy in a scratch directory (hard links where the file system allows):
a tree inside this repository (torch in its venv) would otherwise be judged as part of the
repository's project, the files of which autograd-lint then reads as well.

``--base REV`` installs another commit of autograd-lint (``git archive``, then ``pip install
--no-deps --target`` into the scratch directory) and runs its cold, warm and import commands
next to this checkout's, in the same rounds, so a slowdown shows in the run it happens: each
base row is followed by the ratio of this checkout to it. The import rows time a whole
``python -c "import autograd_lint.cli"``; the ``python -c pass`` row is the interpreter's own
share of it.

It prints a table per tree with each time as a ratio to ruff's, and writes everything as JSON
(--out). Usage, from the repository root with the venv active::

    pip install --no-deps -r bench/requirements.txt   # ruff, and the peer packages
    python bench/run.py                                # torch and the peers, 5 rounds
    python bench/run.py --rounds 3 --tree ~/src/kornia --no-flake8 --out bench/results.json
    python bench/run.py --base 66cfb9d --rounds 9 --no-flake8   # this checkout against 66cfb9d
    python bench/run.py --base 66cfb9d --rounds 7 --flake8-rounds 2 --readme  # README's table

This is a benchmark, not a test: nothing here asserts a number.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from flake8_overhead import flake8_command  # noqa: E402  (bench/ is not a package)

# Published packages with custom Function classes, benched after torch when installed.
PEER_PACKAGES = ("kornia", "timm", "fairscale")
FLAKE8_WITHOUT = "flake8 (default checks)"
FLAKE8_WITH = "flake8 + autograd-lint plugin"


def package_dir(name: str) -> Optional[Path]:
    """The directory of an installed package, found without importing it (or None)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_trees() -> list[Path]:
    torch = package_dir("torch")
    if torch is None:
        sys.exit("torch is not installed: pass --tree PATH")
    peers = {name: package_dir(name) for name in PEER_PACKAGES}
    missing = [name for name, found in peers.items() if found is None]
    if missing:
        print(f"not installed, not benched: {', '.join(missing)} "
              "(pip install --no-deps -r bench/requirements.txt)", flush=True)
    return [torch, *(found for found in peers.values() if found is not None)]


class Command(list):
    """A command line, and what its environment adds (``--base``'s ``PYTHONPATH``)."""

    def __init__(self, argv: list[str], env: Optional[dict[str, str]] = None) -> None:
        super().__init__(argv)
        self.env = {**os.environ, **env} if env else None


def run_timed(command: list[str], cwd: Path) -> float:
    """Wall seconds of the command, with nothing else running here meanwhile."""
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=getattr(command, "env", None))
    return time.perf_counter() - start


def run_sampling_memory(command: list[str], cwd: Path) -> int:
    """Peak memory (bytes, PSS) of the command's whole process tree, sampled every 5 ms.

    Not timed: reading smaps_rollup walks each process's page tables, and on a 2-core machine
    sampling three processes 200 times a second took a fifth of the CPU (17 s of system time in
    a 44 s benchmark), more from a command with worker processes than from one without."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=getattr(command, "env", None))
    peak = 0
    while process.poll() is None:
        peak = max(peak, _tree_rss(process.pid))
        time.sleep(0.005)
    return peak


def _tree_rss(pid: int) -> int:
    """Memory of the process tree: the sum of each process's proportional set size (PSS), so
    that pages forked workers share with their parent count once, not once per process (a plain
    sum of RSS would charge a forking tool for memory it does not use; for one process, as ruff,
    PSS and RSS agree). Falls back to RSS where smaps_rollup is missing."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            total += _memory_of(current)
            with open(f"/proc/{current}/task/{current}/children") as children:
                pending.extend(int(c) for c in children.read().split())
        except (OSError, ValueError):
            continue
    return total


def _memory_of(pid: int) -> int:
    for path, field in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            with open(path) as lines:
                for line in lines:
                    if line.startswith(field):
                        return int(line.split()[1]) * 1024
        except OSError:
            continue
    return 0


def read_all(tree: str) -> None:  # the floor: what reading every file costs
    for directory, _, names in os.walk(tree):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(directory, name), "rb") as handle:
                    handle.read()


def commands(tree: Path, cache_dir: Path, flake8: bool, base: Optional["Base"] = None) -> dict[str, list[str]]:
    python = sys.executable
    lint = [python, "-m", "autograd_lint", "--quiet", "--exit-zero"]
    found: dict[str, list[str]] = {
        "floor: read bytes": [python, "-c", f"import runpy,sys; sys.argv=['', {str(tree)!r}]; "
                              f"runpy.run_path({str(Path(__file__))!r}, run_name='read_all')"],
        "floor: grep Function": ["grep", "-rl", "--include=*.py", "Function", str(tree)],
        "ruff check (default rules)": [_ruff() or "ruff", "check", "--no-cache", "--exit-zero", "--quiet", str(tree)],
        "autograd-lint cold": [*lint, "--no-cache", str(tree)],
        "autograd-lint cold --jobs 1": [*lint, "--no-cache", "--jobs", "1", str(tree)],
        "autograd-lint warm": [*lint, "--cache-dir", str(cache_dir), str(tree)],
    }
    if base is not None:
        with_base = {"python -c pass": [python, "-c", "pass"]}
        for name, argv in [*found.items(), ("CLI import", [python, "-c", "import autograd_lint.cli"])]:
            if name.startswith("autograd-lint") or name == "CLI import":
                with_base[name] = argv
                own_cache = [str(base.cache_dir) if a == str(cache_dir) else a for a in argv]  # warm: its own
                with_base[f"{name} ({base.label})"] = Command(own_cache, {"PYTHONPATH": str(base.site)})
            else:
                with_base[name] = argv
        found = with_base
    if _ruff() is None:
        del found["ruff check (default rules)"]
    if flake8:
        for name, variant in ((FLAKE8_WITHOUT, "without"), (FLAKE8_WITH, "with")):
            found[name] = [*flake8_command(python, variant, "auto", os.devnull), str(tree)]
    return found


def _ruff():
    beside = Path(sys.executable).parent / "ruff"  # the venv's, when it is not activated
    return str(beside) if beside.exists() else shutil.which("ruff")


def compile_bytecode() -> None:
    """Write the .pyc files of autograd_lint, as `pip install` does: an editable install (this
    repository's venv) writes them on first import, except where PYTHONDONTWRITEBYTECODE is set
    (it is on some CI machines), and then every run compiles each module again (0.15 s a process)."""
    spec = importlib.util.find_spec("autograd_lint")
    if spec is not None and spec.submodule_search_locations:
        package = next(iter(spec.submodule_search_locations))
        subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=False)


class Base:
    """Another commit of autograd-lint, installed for ``--base``: its package in ``site`` (put on
    PYTHONPATH ahead of this checkout), its own cache directory for the warm runs."""

    def __init__(self, revision: str, scratch: Path) -> None:
        commit = subprocess.run(["git", "rev-parse", "--short", revision], cwd=REPO, check=True,
                                capture_output=True, text=True).stdout.strip()
        self.label = f"base {commit}"
        source, self.site, self.cache_dir = scratch / "base-src", scratch / "base-site", scratch / "base-cache"
        source.mkdir()
        archive = subprocess.run(["git", "archive", commit], cwd=REPO, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
        print(f"installing {self.label} ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(self.site),
                        str(source)], check=True)

    def check_imported_from(self, where: Path) -> None:
        """Stop unless the base's commands, run in ``where``, import the base's package."""
        probe = [sys.executable, "-c", "import autograd_lint; print(autograd_lint.__file__)"]
        found = subprocess.run(probe, cwd=where, env={**os.environ, "PYTHONPATH": str(self.site)},
                               check=True, capture_output=True, text=True).stdout.strip()
        if not Path(found).resolve().is_relative_to(self.site.resolve()):
            raise SystemExit(f"{self.label}: its commands import {found}, not the base's package")


def copy_of(tree: Path, scratch: Path) -> Path:
    """A copy of the tree under ``scratch``: every file hard-linked where the file system allows
    (torch's thousands of headers stay: walking past them is part of a run over it)."""
    def link(source: str, target: str) -> None:
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)

    copy = scratch / "trees" / tree.name
    shutil.copytree(tree, copy, copy_function=link, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def bench_tree(tree: Path, rounds: int, flake8_rounds: int, base_revision: Optional[str] = None) -> dict:
    original = tree
    with tempfile.TemporaryDirectory() as scratch:
        cache_dir = Path(scratch) / "cache"
        base = Base(base_revision, Path(scratch)) if base_revision else None
        tree = copy_of(tree, Path(scratch))
        table = commands(tree, cache_dir, flake8=flake8_rounds > 0, base=base)
        # Every command runs in the scratch directory, not in this repository: `python -m` and
        # `python -c` put the working directory first on sys.path, ahead of PYTHONPATH, so in
        # the repository the base's commands ran this checkout's package (every "this / base"
        # ratio before 2026-11-29 compared this checkout with itself). This checkout is found
        # through its install (the editable install's path entry), the base through PYTHONPATH.
        where = Path(scratch)
        if base is not None:
            base.check_imported_from(where)
        for name, command in table.items():  # fill the caches
            if name.startswith("autograd-lint warm"):
                subprocess.run(command, cwd=where, capture_output=True, env=getattr(command, "env", None))
        # Rounds go through every command in turn: the machine's speed drifts (a shared host
        # can be 1.5x slower for minutes), and interleaving lets the drift hit all alike.
        times: dict[str, list[float]] = {name: [] for name in table}
        for round_number in range(1, rounds + 1):
            timed = [name for name in table
                     if name not in (FLAKE8_WITHOUT, FLAKE8_WITH) or round_number <= flake8_rounds]
            for name in timed:
                times[name].append(run_timed(table[name], where))
            print(f"  round {round_number}: " + ", ".join(f"{name} {times[name][-1]:.2f} s" for name in timed),
                  flush=True)
        peaks = {name: run_sampling_memory(command, where) for name, command in table.items()}
        rows = {name: {"median_s": statistics.median(times[name]), "runs_s": times[name],
                       "peak_mb": peaks[name] / 2**20} for name in table}
        files = sum(1 for _ in tree.rglob("*.py"))
        size = sum(p.stat().st_size for p in tree.rglob("*.py"))
    return {"tree": str(original), "files": files, "megabytes": size / 1e6, "rows": rows}


def print_table(result: dict) -> None:
    rows = result["rows"]
    ruff = rows.get("ruff check (default rules)", {}).get("median_s")
    print(f"\n{result['tree']}: {result['files']} files, {result['megabytes']:.1f} MB")
    print("| command | median s | x ruff | peak MB | this / base |\n|---|---:|---:|---:|---:|")
    for name, row in rows.items():
        ratio = f"{row['median_s'] / ruff:.2f}" if ruff else "-"
        base = next((other for key, other in rows.items() if key.startswith(f"{name} (base ")), None)
        against = f"{row['median_s'] / base['median_s']:.2f}" if base else ""
        print(f"| {name} | {row['median_s']:.3f} | {ratio} | {row['peak_mb']:.0f} | {against} |")
    cold, warm = rows["autograd-lint cold"]["median_s"], rows["autograd-lint warm"]["median_s"]
    print(f"\nwarm / cold: {warm / cold:.3f}" + (f"   cold / ruff: {cold / ruff:.2f}" if ruff else ""))
    if FLAKE8_WITH in rows:
        with_plugin, without = rows[FLAKE8_WITH]["runs_s"], rows[FLAKE8_WITHOUT]["runs_s"]
        print(f"flake8 with / without the plugin: {rows[FLAKE8_WITH]['median_s'] / rows[FLAKE8_WITHOUT]['median_s']:.3f}"
              f" (per round: {', '.join(f'{w / wo:.3f}' for w, wo in zip(with_plugin, without))})")


def readme_table(results: dict) -> str:
    """The README's speed table (between its ``bench-table`` markers): one row per command,
    seconds and the ratio to ruff for each tree, peak memory for the first tree (torch); then,
    for the first tree, this checkout against ``--base`` and flake8 with the plugin against
    without it."""
    trees = results["trees"]
    names = list(trees[0]["rows"])
    header = ["command"]
    for index, tree in enumerate(trees):
        label = Path(tree["tree"]).name
        header += [f"{label}: s", "× ruff"] + (["peak MB"] if index == 0 else [])
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    files = ["files (MB)"]
    for index, tree in enumerate(trees):
        files += [f"{tree['files']:,} ({tree['megabytes']:.2g})", ""] + ([""] if index == 0 else [])
    lines.append("| " + " | ".join(files) + " |")
    for name in names:
        emphasised = name in ("autograd-lint cold", "autograd-lint warm")
        cells = [f"**{name}**" if emphasised else name]
        for index, tree in enumerate(trees):
            row = tree["rows"].get(name)
            ruff = tree["rows"].get("ruff check (default rules)", {}).get("median_s")
            if row is None:
                cells += ["", ""] + ([""] if index == 0 else [])
                continue
            ratio = f"{row['median_s'] / ruff:.2f}" if ruff else "-"
            cells += [f"{row['median_s']:.2f}", f"**{ratio}**" if emphasised else ratio]
            if index == 0:
                cells.append(f"{row['peak_mb']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    first = trees[0]
    label = Path(first["tree"]).name
    rows = first["rows"]
    against = [f"{name}: {row['median_s'] / rows[f'{name} ({base})']['median_s']:.2f}x"
               for name, row in rows.items()
               for base in [next((key[len(name) + 2:-1] for key in rows if key.startswith(f"{name} (base ")), None)]
               if base is not None]
    if against:
        lines.append(f"\n{label} this/base: " + ", ".join(against))
    if FLAKE8_WITH in rows:
        per_round = ", ".join(f"{w / wo:.3f}" for w, wo in zip(rows[FLAKE8_WITH]["runs_s"], rows[FLAKE8_WITHOUT]["runs_s"]))
        lines.append(f"{label} flake8 with/without "
                     f"{rows[FLAKE8_WITH]['median_s'] / rows[FLAKE8_WITHOUT]['median_s']:.3f} [{per_round}]")
    return "\n".join(lines) + "\n"


def write_readme_table(readme: Path, results: dict) -> None:
    """Put ``readme_table(results)`` between the README's ``bench-table`` markers."""
    from autograd_lint.dev import table_bounds

    text = readme.read_text(encoding="utf-8")
    start, end = table_bounds(text, "bench-table")
    readme.write_text(text[:start] + readme_table(results) + text[end:], encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", type=Path, help="a tree to lint (default: torch)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--flake8-rounds", type=int, default=3,
                        help="rounds of the flake8 commands, at most --rounds (default: 3)")
    parser.add_argument("--no-flake8", action="store_true", help="leave the flake8 commands out")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--base", metavar="REV", help="also run another commit's autograd-lint, paired round by round")
    parser.add_argument("--readme", action="store_true",
                        help="write the table into README.md, between its bench-table markers")
    args = parser.parse_args()
    if args.rounds < 1 or args.flake8_rounds < 1:
        parser.error("--rounds and --flake8-rounds must be at least 1")
    flake8_rounds = 0 if args.no_flake8 else min(args.flake8_rounds, args.rounds)
    if flake8_rounds and importlib.util.find_spec("flake8") is None:
        print("flake8 is not installed, not benched (pip install -e '.[test]')", flush=True)
        flake8_rounds = 0
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "base": args.base,
        "trees": [],
    }
    compile_bytecode()
    for tree in args.tree or default_trees():
        print(f"{tree} ({args.rounds} rounds)", flush=True)
        results["trees"].append(bench_tree(tree.resolve(), args.rounds, flake8_rounds, args.base))
    for tree_result in results["trees"]:
        print_table(tree_result)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    if args.readme:
        write_readme_table(REPO / "README.md", results)
        print("README.md: speed table written", flush=True)
    return 0


if __name__ == "read_all":  # the floor command runs this file with run_name="read_all"
    read_all(sys.argv[1])
elif __name__ == "__main__":
    sys.exit(main())
