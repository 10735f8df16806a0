#!/usr/bin/env python3
"""The ecosystem check: lint pinned published packages and see what a change of autograd-lint does to them.

ruff's ecosystem check is the model. The packages and their versions are pinned in
bench/ecosystem-packages.txt (`NAME==VERSION [paths=DIR,DIR]`). `run` fetches each with
`pip download --no-deps` into a cache directory (wheels preferred; an sdist is unpacked too),
never installing or importing it: pip only prepares an sdist's metadata, in its own isolated
build environment (or in this one, for an sdist whose setup.py needs torch to say it). Then it lints each package with the real CLI, as a user would::

    python -m autograd_lint --format json --no-cache [--select CODES] DIR [DIR ...]

from the unpacked package's root (so the paths in the findings are `torch/...`, the same in
every cache), and writes one JSON file: every finding per package, the autograd-lint commit and
the options (bench/ecosystem_compare.py documents the format).

Usage, from the repository root with the venv active::

    python bench/ecosystem.py run                          # this tree, default rules
    python bench/ecosystem.py run --select ALL --out all.json
    python bench/ecosystem.py run --base main              # main against this tree: what changed
    python bench/ecosystem.py run --base v0.1 --head HEAD~2
    python bench/ecosystem.py compare BEFORE.json AFTER.json
    python bench/ecosystem.py summary RESULT.json          # findings per code x severity x package
    python bench/ecosystem.py report RESULT.json --write bench/ecosystem-findings.md

`--base`/`--head` lint with those commits, each checked out with `git worktree` in a temporary
directory, and print the comparison: new, gone and moved findings per code and per package. The
cache (default bench/.ecosystem/, ignored by git) keeps the downloads, so only the first run
needs the network. A package that yields no Function class (a meta-package with no Python code,
a wrong paths=) makes `run` exit with status 1 and one line naming it, after the results are
written; `summary` and `report` show the Function-class count of each package. CI never runs this: tests/test_ecosystem_compare.py tests the comparison
and the report with small hand-made results.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ecosystem_compare  # noqa: E402  (bench/ is not a package)

PACKAGES_FILE = REPO / "bench" / "ecosystem-packages.txt"
DEFAULT_CACHE = REPO / "bench" / ".ecosystem"
# Older setup.py files import pkg_resources, which recent setuptools no longer ships: pip's
# isolated build environment, where an sdist's metadata is prepared, then fails (mmcv 2.2.0).
# A download that failed is tried once more with this constraint on that environment.
BUILD_CONSTRAINT = "setuptools<81\n"


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    paths: tuple[str, ...]  # empty: the top-level packages of the unpacked archive

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


def read_packages(path: Path) -> list[Package]:
    packages = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        spec, *options = line.split()
        name, sep, version = spec.partition("==")
        paths: tuple[str, ...] = ()
        for option in options:
            key, _, value = option.partition("=")
            if key != "paths" or not value:
                sys.exit(f"{path}:{number}: unknown option {option!r} (only paths=DIR,DIR)")
            paths = tuple(value.split(","))
        if not sep or not name or not version:
            sys.exit(f"{path}:{number}: expected NAME==VERSION, got {spec!r}")
        packages.append(Package(name, version, paths))
    return packages


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def find_archive(downloads: Path, package: Package) -> Optional[Path]:
    """The wheel or sdist of the package already in the cache (a local version such as
    2.13.0+cpu counts as 2.13.0)."""
    if not downloads.is_dir():
        return None
    found = []
    for archive in downloads.iterdir():
        stem = archive.name
        for suffix in (".whl", ".tar.gz", ".zip"):
            if stem.endswith(suffix):
                stem = stem[: -len(suffix)]
                break
        else:
            continue
        name, _, rest = stem.partition("-")
        version = rest.split("-", 1)[0]
        if _normal(name) == _normal(package.name) and version.split("+")[0] == package.version:
            found.append(archive)
    # A wheel when there is one: it holds what users install.
    return min(found, key=lambda archive: (archive.suffix != ".whl", archive.name)) if found else None


def download(package: Package, downloads: Path) -> Path:
    archive = find_archive(downloads, package)
    if archive is not None:
        return archive
    downloads.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--prefer-binary",
               "--dest", str(downloads), package.spec]
    print(f"  pip download --no-deps {package.spec}", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        # An sdist whose build requires torch would otherwise get the newest torch in pip's
        # isolated build environment (a multi-GB CUDA build, minutes per package): pin the one
        # this environment has.
        constraint = Path(scratch) / "build-constraint.txt"
        constraint.write_text(_torch_pin())
        env = dict(os.environ, PIP_CONSTRAINT=" ".join(filter(None, [os.environ.get("PIP_CONSTRAINT"), str(constraint)])))
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            constraint.write_text(BUILD_CONSTRAINT + _torch_pin())
            result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0 and find_archive(downloads, package) is None:
        # Some sdists import torch in setup.py just to say their metadata (theseus-ai, mamba-ssm):
        # in pip's isolated build environment there is none. Prepare it in this environment
        # instead, which has torch when the test dependencies are installed.
        result = subprocess.run(command[:4] + ["--no-build-isolation"] + command[4:], capture_output=True, text=True)
    archive = find_archive(downloads, package)
    if archive is None:
        sys.exit(f"pip download failed for {package.spec}:\n{result.stdout[-2000:]}{result.stderr[-3000:]}")
    return archive


def _torch_pin() -> str:
    """``torch==VERSION`` of the torch installed here (the test environment's), or nothing."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        return f"torch=={version('torch')}\n"
    except (ImportError, PackageNotFoundError):
        return ""


def unpack(archive: Path, unpacked: Path) -> Path:
    """The root of the unpacked archive (a wheel's top level, an sdist's single directory)."""
    target = unpacked / archive.name
    done = target / ".unpacked"
    if not done.exists():
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        if archive.suffix in (".whl", ".zip"):
            with zipfile.ZipFile(archive) as bundle:
                bundle.extractall(target)
        else:
            with tarfile.open(archive) as bundle:
                if hasattr(tarfile, "data_filter"):
                    bundle.extractall(target, filter="data")
                else:  # pragma: no cover - Python before 3.11.4
                    bundle.extractall(target)
        done.write_text("")
    entries = [entry for entry in target.iterdir() if entry.name != ".unpacked"]
    if archive.suffix != ".whl" and len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return target


def lint_paths(package: Package, root: Path) -> list[str]:
    if package.paths:
        missing = [path for path in package.paths if not (root / path).exists()]
        if missing:
            sys.exit(f"{package.spec}: no {', '.join(missing)} in {root}")
        return list(package.paths)
    found = sorted(entry.name for entry in root.iterdir()
                   if entry.is_dir() and (entry / "__init__.py").is_file())
    if not found:
        sys.exit(f"{package.spec}: no top-level package in {root}: give paths= in {PACKAGES_FILE.name}")
    return found


def lint(package: Package, root: Path, source: Path, select: Optional[str]) -> dict:
    """The CLI's report on the package, with autograd_lint taken from the tree ``source``."""
    paths = lint_paths(package, root)
    command = [sys.executable, "-m", "autograd_lint", "--format", "json", "--no-cache"]
    if select:
        command += ["--select", select]
    command += paths
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(source), *filter(None, [env.get("PYTHONPATH")])])
    start = time.perf_counter()
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    try:
        report = json.loads(result.stdout)
    except ValueError:
        report = {}
    if result.returncode not in (0, 1) or not report:
        print(f"  {package.spec}: the CLI failed (exit status {result.returncode}):\n{result.stderr[-3000:]}", flush=True)
    findings = report.get("findings", [])
    classes = report.get("summary", {}).get("function_classes", "?")
    print(f"  {package.name} {package.version}: {classes} Function classes, {len(findings)} findings, {seconds:.1f} s",
          flush=True)
    return {
        "version": package.version,
        "paths": paths,
        "exit_status": result.returncode,
        "seconds": round(seconds, 2),
        "summary": report.get("summary", {}),
        "stderr": [line for line in result.stderr.splitlines() if line.strip()],
        "findings": [{key: raw.get(key) for key in ("path", "line", "column", "code", "name", "severity",
                                                     "message", "function_class", "method")}
                     for raw in findings],
    }


def _git(source: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=source, capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else ""


def describe_tool(source: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(source), *filter(None, [os.environ.get("PYTHONPATH")])]))
    version = subprocess.run([sys.executable, "-m", "autograd_lint", "--version"], cwd=source, env=env,
                             capture_output=True, text=True).stdout.strip()
    return {
        "commit": _git(source, "rev-parse", "HEAD"),
        "dirty": bool(_git(source, "status", "--porcelain", "--untracked-files=no")),
        "version": version.split()[-1] if version else "",
        "source": str(source),
    }


def run_all(packages: list[Package], cache: Path, source: Path, select: Optional[str],
            packages_file: Path = PACKAGES_FILE) -> dict:
    roots = {}
    for package in packages:
        roots[package.name] = unpack(download(package, cache / "downloads"), cache / "unpacked")
    tool = describe_tool(source)
    print(f"linting with autograd-lint {tool['version']} at {tool['commit'][:12]}"
          + (" (uncommitted changes)" if tool["dirty"] else "") + (f", --select {select}" if select else ""), flush=True)
    results = {name: lint(package, roots[name], source, select)
               for name, package in ((p.name, p) for p in packages)}
    return {"autograd_lint": tool, "options": {"select": select, "packages_file": packages_file.name},
            "packages": results}


def fail_on_empty_packages(results: dict[str, dict]) -> int:
    """1, with one line on stderr per package that yields no Function class, else 0: a package
    linted empty (a meta-package, a wrong paths=) must not pass for a package with no findings.
    Called after the results are written, so the run can still be read."""
    problems = [(label, line) for label, result in results.items()
                for line in ecosystem_compare.packages_without_function_classes(result)]
    for label, line in problems:
        print(f"ecosystem.py: error: {line}" + (f" [{label}]" if len(results) > 1 else ""), file=sys.stderr, flush=True)
    return 1 if problems else 0


def write_json(result: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}", flush=True)


def run_revisions(args, packages: list[Package]) -> int:
    """Lint with --base and --head (or this tree), each in a git worktree, then compare."""
    revisions = [("base", args.base), ("head", args.head)]
    results = {}
    with tempfile.TemporaryDirectory(prefix="ecosystem-") as scratch:
        for label, revision in revisions:
            if revision is None:  # --head left out: this tree, as it is
                results[label] = run_all(packages, args.cache_dir, REPO, args.select, args.packages)
                continue
            worktree = Path(scratch) / label
            subprocess.run(["git", "worktree", "add", "--detach", str(worktree), revision], cwd=REPO, check=True,
                           capture_output=True)
            try:
                results[label] = run_all(packages, args.cache_dir, worktree, args.select, args.packages)
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=REPO, capture_output=True)
    suffix = f"-select-{args.select}" if args.select else ""
    for label, result in results.items():
        write_json(result, args.cache_dir / "results" / f"{label}-{result['autograd_lint']['commit'][:12]}{suffix}.json")
    comparison = ecosystem_compare.compare(results["base"], results["head"])
    print()
    print(ecosystem_compare.format_comparison(comparison, f"base {args.base}", f"head {args.head or 'this tree'}"), end="")
    return fail_on_empty_packages(results)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("run", help="download, lint, write the results (the default)")
    run.add_argument("--packages", type=Path, default=PACKAGES_FILE, help="the pinned list (default: %(default)s)")
    run.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="downloads, unpacked packages, results")
    run.add_argument("--only", action="append", metavar="NAME", help="lint only this package (repeatable)")
    run.add_argument("--select", help="passed to the CLI's --select (e.g. ALL)")
    run.add_argument("--out", type=Path, help="the result file (default: CACHE/results/COMMIT[-select-CODES].json)")
    run.add_argument("--base", metavar="REV", help="lint with this commit too, and compare")
    run.add_argument("--head", metavar="REV", help="with --base: the commit to compare (default: this tree)")
    comparing = commands.add_parser("compare", help="new, gone and moved findings from one result to another")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    summarising = commands.add_parser("summary", help="findings per code x severity x package")
    summarising.add_argument("result", type=Path)
    reporting = commands.add_parser("report", help="the error findings as a markdown table with verdicts")
    reporting.add_argument("result", type=Path)
    reporting.add_argument("--write", type=Path, metavar="MARKDOWN",
                           help="write (keeping the verdicts and notes already there) instead of printing")
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in commands.choices and argv[0] not in ("-h", "--help")):
        argv.insert(0, "run")  # run is the default: `ecosystem.py --select ALL` is `run --select ALL`
    args = parser.parse_args(argv)

    if args.command == "compare":
        comparison = ecosystem_compare.compare(ecosystem_compare.load_result(args.before),
                                               ecosystem_compare.load_result(args.after))
        print(ecosystem_compare.format_comparison(comparison, str(args.before), str(args.after)), end="")
        return 0
    if args.command == "summary":
        print(ecosystem_compare.format_summary(ecosystem_compare.load_result(args.result)), end="")
        return 0
    if args.command == "report":
        existing = args.write.read_text(encoding="utf-8") if args.write and args.write.exists() else ""
        markdown = ecosystem_compare.render_report(ecosystem_compare.load_result(args.result), existing)
        if args.write:
            args.write.write_text(markdown, encoding="utf-8")
            print(f"wrote {args.write}")
        else:
            print(markdown, end="")
        return 0

    packages = read_packages(args.packages)
    if args.only:
        unknown = set(args.only) - {p.name for p in packages}
        if unknown:
            parser.error(f"not in {args.packages}: {', '.join(sorted(unknown))}")
        packages = [p for p in packages if p.name in args.only]
    if args.head and not args.base:
        parser.error("--head needs --base")
    if args.base:
        return run_revisions(args, packages)
    result = run_all(packages, args.cache_dir, REPO, args.select, args.packages)
    suffix = f"-select-{args.select}" if args.select else ""
    write_json(result, args.out or args.cache_dir / "results" / f"{result['autograd_lint']['commit'][:12]}{suffix}.json")
    print()
    print(ecosystem_compare.format_summary(result), end="")
    return fail_on_empty_packages({"this tree": result})


if __name__ == "__main__":
    sys.exit(main())
