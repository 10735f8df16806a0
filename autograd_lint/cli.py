"""The ``autograd-lint`` command: options, then config, discovery, engine, report, exit code.

Exit codes (as ruff): 0 no findings, 1 findings, 2 usage error, bad config or internal error.
stdout carries only the report (finding lines, JSON, or the statistics table); messages for the
user (summary, warnings, errors) go to stderr, one line each, never a traceback for bad input.
Static mode never imports torch or the user's code.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
from pathlib import Path

from autograd_lint import __version__
from autograd_lint.catalogue import RULES
from autograd_lint.config import DEFAULT_CACHE_DIR, Config, ConfigError, empty_config, find_config, load_config
from autograd_lint.discovery import discover, exclude_spec, missing_paths
from autograd_lint.dynamic.options import add_arguments as add_dynamic_arguments
from autograd_lint.fix.options import add_arguments as add_fix_arguments
from autograd_lint.fix.options import hint_lines
from autograd_lint.report import FORMATS, LintRun, formatter
from autograd_lint.report.text import summary_line
from autograd_lint.selection import (
    RulesPerFile,
    EnabledRules,
    SelectorError,
    SelectorLayer,
    parse_selectors,
)
from autograd_lint.source import DEFAULT_MAX_FILE_SIZE

# Read by type checkers only: `typing` and `dataclasses` (with `inspect`) cost a plain run's
# import of this module a third of its time; `dataclasses.replace` is imported where the results
# (dataclasses of `findings`, which has loaded it by then) are copied.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional, Sequence, TextIO

OPT_IN_CODES = tuple(code for code, info in RULES.items() if not info.default_enabled)
PROG = "autograd-lint"
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """Bad options, paths or config: one line on stderr, exit 2."""


def run() -> None:
    """The ``autograd-lint`` command (and ``python -m autograd_lint``): ``main``, then exit at
    once with ``os._exit``, skipping the interpreter's teardown: by then the cache and the report
    are written (the report is flushed here) and the worker processes joined. The cyclic
    collector stays off for the whole command, as in the workers (see ``gc_pause``). Why both:
    bench/NOTES.md."""
    gc.disable()
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader has gone (`| head`) or the stream is closed
            pass
    os._exit(code)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["server"]:  # the language server (an optional extra): not a path to lint
        from autograd_lint.server import main as serve

        return serve(argv[1:])
    try:
        return _main(argv)
    except (UsageError, ConfigError, SelectorError) as error:
        _error(str(error))
        return EXIT_ERROR
    except BrokenPipeError:  # a closed pipe outside the report (the report's is handled there)
        _discard_stdout()
        return EXIT_ERROR
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except Exception:  # a bug in autograd-lint itself, not bad input: show where
        _error("internal error (a bug in autograd-lint; please report it with this output):")
        import traceback

        traceback.print_exc()
        return EXIT_ERROR


def _main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse has printed usage and the error (or --help)
        return exit_.code if isinstance(exit_.code, int) else EXIT_ERROR

    if args.explain is not None:
        from autograd_lint.explain import ExplainError, explain

        try:
            explain(args.explain, sys.stdout)
        except ExplainError as error:
            raise UsageError(str(error)) from None
        return EXIT_CLEAN
    if args.list_rules:
        from autograd_lint.rule_list import write_rule_list

        write_rule_list(sys.stdout, args.format)
        return EXIT_CLEAN
    if args.statistics and args.format not in ("text", "json"):
        raise UsageError(f"--statistics prints a text table or JSON; it cannot be combined with --format {args.format}")

    if args.fix or args.diff:
        # Fixing lints the same text several times (the run, each round, the lint after
        # writing): each class is then parsed with libcst, and its positions computed, once.
        from autograd_lint.analysis.snippet import remember_class_trees

        with remember_class_trees():
            return _run(args)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The run ``args`` ask for, once the options are checked."""
    start = time.perf_counter()
    paths = args.paths or ["."]
    if "-" in paths:
        return _main_stdin(args, paths, start)
    if args.stdin_filename is not None:
        raise UsageError("--stdin-filename names the text read from stdin: give - as the PATH")
    # A missing path is reported and the others are linted; the run then exits 2 (as ruff does).
    missing = missing_paths(paths)
    for path in missing:
        _error(f"{path}: no such file or directory")
    paths = [path for path in paths if path not in missing]
    if not paths:
        return EXIT_ERROR
    config = _load_config(args, paths[0])
    selection = EnabledRules.from_layers([config.selector_layer(), _cli_layer(args)])
    selection_for = RulesPerFile(selection, config.per_file_ignores, config.root)

    # --dynamic: the fork server starts now, importing torch while the files are linted.
    dynamic_session = _start_dynamic(args, config) if args.dynamic else None
    with dynamic_session or contextlib.nullcontext():
        exclude = args.exclude if args.exclude is not None else config.exclude
        spec = exclude_spec(exclude, [*config.extend_exclude, *(args.extend_exclude or [])])
        discovered = discover(paths, spec, str(config.root), args.force_exclude or config.force_exclude)
        for message in discovered.warnings:
            _warn(message)
        if not discovered.files:
            _warn(f"no Python files found under {', '.join(paths)}")

        max_file_size = args.max_file_size or config.max_file_size or DEFAULT_MAX_FILE_SIZE
        projects = _Projects(config, spec, paths, discovered)
        # --fix and --diff: the fix driver asks the fixers itself, and sets fix_available from
        # their answers where it reports the lint's results (fix.driver.process).
        results = _lint(discovered.files, selection_for, max_file_size, _jobs_for(args.jobs),
                        _cache_dir(args, config), discovered.stats, projects, _wants_dependents(args, paths),
                        annotate_fixes=not (args.fix or args.diff))
        fix_lines: list[str] = []
        if args.fix or args.diff:  # the fixers (and libcst) load only when asked for
            from autograd_lint.fix.driver import process as process_fixes

            fixes = process_fixes(results, args, selection_for, lambda: _lint(
                discovered.files, selection_for, max_file_size, _jobs_for(args.jobs), _cache_dir(args, config),
                None, projects), sys.stdout, sys.stderr)
            if fixes.exit_code is not None:  # --diff: the diffs are the output
                return fixes.exit_code
            results, fix_lines = fixes.results, fixes.summary_lines
        elif args.format == "text" and not args.statistics and not args.quiet:
            fix_lines = hint_lines(results)
        dynamic = None
        if args.dynamic:  # imports the user's code, in child processes; never in the flake8 plugin
            dynamic = _run_dynamic(results, args, dynamic_session, selection_for, discovered.files)
            results = dynamic.results
        run = LintRun(results=results, seconds=time.perf_counter() - start)

        internal_errors = [
            message if result.path in message else f"{result.path}: {message}"
            for result in results
            for message in result.internal_errors
        ]
        _write_report(run, args, sys.stdout)
        for message in internal_errors:
            _error(f"internal error: {message}")
        not_checked = (len(dynamic.unchecked), len(dynamic.functions)) if dynamic else (0, 0)
        if args.format == "text" and not args.quiet:
            print(summary_line(run, not_checked), file=sys.stderr)
        for line in fix_lines:
            print(line, file=sys.stderr)
        if dynamic and not args.quiet:
            print(dynamic.summary_line, file=sys.stderr)

        if internal_errors or missing:
            return EXIT_ERROR
        if dynamic and dynamic.require_checked and dynamic.missed_checkable():  # asked for: not checked fails the run
            return EXIT_FINDINGS
        return EXIT_FINDINGS if run.findings and not args.exit_zero else EXIT_CLEAN


def _main_stdin(args: argparse.Namespace, paths: list[str], start: float) -> int:
    """``autograd-lint - --stdin-filename PATH``: the text on stdin, linted as the file PATH
    would be (as ruff and flake8 do). With ``--fix`` the fixed text goes to stdout (the findings
    left to stderr), with ``--diff`` the diff; ``--dynamic`` needs files it can import."""
    if paths != ["-"]:
        raise UsageError("- (read stdin) cannot be combined with other PATHs")
    if args.dynamic:
        raise UsageError("--dynamic imports the code from files: it cannot check text read from stdin")
    from autograd_lint.engine import gather_project, lint_text
    from autograd_lint.pipeline import FileResult, agl000
    from autograd_lint.source import SourceError, text_of, too_large_message

    name = args.stdin_filename or "-"
    where = name if args.stdin_filename else os.getcwd()
    config = _load_config(args, where)
    selection = EnabledRules.from_layers([config.selector_layer(), _cli_layer(args)])
    selection_for = RulesPerFile(selection, config.per_file_ignores, config.root)
    exclude = args.exclude if args.exclude is not None else config.exclude
    spec = exclude_spec(exclude, [*config.extend_exclude, *(args.extend_exclude or [])])
    if args.stdin_filename and (args.force_exclude or config.force_exclude):
        from autograd_lint.discovery import excluded_by_name

        if excluded_by_name(spec, name, str(config.root)):
            if args.fix:
                sys.stdout.buffer.write(sys.stdin.buffer.read())  # unchanged, as ruff does
            return EXIT_CLEAN
    data = sys.stdin.buffer.read()
    max_file_size = args.max_file_size or config.max_file_size or DEFAULT_MAX_FILE_SIZE
    try:
        if len(data) > max_file_size:
            raise SourceError(too_large_message(len(data), max_file_size))
        text: Optional[str] = text_of(data)
        result = None
    except SourceError as error:
        text, result = None, FileResult(name)
        if selection_for(name).is_enabled("AGL000"):
            result.findings.append(agl000(name, error.message))
    project = None
    if text is not None and args.stdin_filename:
        from autograd_lint.project_scope import project_files, project_root

        root = project_root(name, config)
        if root is not None:
            found = project_files(root, config, spec)
            project = gather_project(found.files, max_file_size, _cache_dir(args, config), found.stats)
    if text is not None:
        result = lint_text(name, text, selection_for(name), project=project)
    results = [result]
    if args.fix or args.diff:
        from autograd_lint.fix.driver import fix_text

        fixed = fix_text(name, data, result.findings, selection_for(name), args) if text is not None else None
        if args.diff:
            if fixed is not None and fixed.after is not None:
                sys.stdout.write(_diff(name, fixed.before, fixed.after))
            return EXIT_FINDINGS if fixed is not None and fixed.after is not None else EXIT_CLEAN
        if fixed is not None and fixed.after is not None:
            sys.stdout.buffer.write(fixed.after.encode(fixed.encoding))
            result = lint_text(name, fixed.after, selection_for(name), project=project)
            results = [result]
        else:
            sys.stdout.buffer.write(data)
        sys.stdout.flush()
        run = LintRun(results=results, seconds=time.perf_counter() - start)
        _write_report(run, args, sys.stderr)
        return EXIT_FINDINGS if run.findings and not args.exit_zero else EXIT_CLEAN
    run = LintRun(results=results, seconds=time.perf_counter() - start)
    _write_report(run, args, sys.stdout)
    for message in result.internal_errors:
        _error(f"internal error: {message}")
    if args.format == "text" and not args.quiet:
        print(summary_line(run), file=sys.stderr)
    if result.internal_errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if run.findings and not args.exit_zero else EXIT_CLEAN


def _diff(name: str, before: str, after: str) -> str:
    from autograd_lint.fix.write import unified_diff

    return unified_diff(name, before, after)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Lint PyTorch custom torch.autograd.Function classes. "
        "Static analysis only: never imports your code or torch.",
        epilog="selectors: codes (AGL201), prefixes (AGL2) or ALL, comma-separated;\n"
        f"  opt-in rules ({', '.join(OPT_IN_CODES)}) are enabled only by their full code or ALL.\n"
        "exit status: 0 no findings, 1 findings, 2 usage, config or internal error.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or directories to lint (default: .); - reads the text of one "
                        "file from stdin (see --stdin-filename)")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--explain", metavar="CODE", help="print the page of a rule and exit")
    parser.add_argument("--list-rules", action="store_true",
                        help="list every rule (code, name, severity, default, fix) and exit; "
                        "with --format json, as JSON")
    parser.add_argument("--config", metavar="FILE", type=Path,
                        help="settings file (default: nearest pyproject.toml with "
                        "[tool.autograd-lint], upward from the first PATH)")

    rules = parser.add_argument_group("rule selection (command line overrides the config file)")
    for flag, what in [
        ("--select", "enable only these rules"),
        ("--extend-select", "enable these rules too"),
        ("--ignore", "disable these rules"),
        ("--extend-ignore", "disable these rules too (same as --ignore)"),
    ]:
        rules.add_argument(flag, metavar="CODES", action="append", help=what)

    files = parser.add_argument_group("files")
    files.add_argument("--exclude", metavar="PATTERNS", type=_comma_list, action="extend",
                       help="gitignore-style patterns to skip, replacing the defaults "
                       "(.git, .venv, venv, build, dist, __pycache__, ...)")
    files.add_argument("--extend-exclude", metavar="PATTERNS", type=_comma_list, action="extend",
                       help="patterns to skip in addition to the defaults")
    files.add_argument("--force-exclude", action="store_true",
                       help="apply the excludes to files named on the command line too (for "
                       "pre-commit and editors, which pass every file by name)")
    files.add_argument("--stdin-filename", metavar="PATH",
                       help="with - as the PATH: lint the text read from stdin as the file PATH "
                       "(its settings, per-file-ignores, project and report path)")
    files.add_argument("--no-dependents", action="store_true",
                       help="with files named (as pre-commit does): report only their findings, not "
                       "those of the project's classes that depend on them (subclasses of their "
                       "Function classes, classes they .apply or gradcheck)")
    files.add_argument("--max-file-size", metavar="BYTES", type=_positive_int,
                       help=f"report larger files as AGL000 without reading them "
                       f"(default: {DEFAULT_MAX_FILE_SIZE} = 5 MiB)")
    files.add_argument("--jobs", "-j", metavar="N", type=_jobs, default="auto",
                       help="worker processes (default: auto = one per core; a small run stays "
                       "in one process)")
    files.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the cache")
    files.add_argument("--cache-dir", metavar="DIR",
                       help=f"where the cache lives (default: {DEFAULT_CACHE_DIR} next to the "
                       "config file, or in the current directory)")

    output = parser.add_argument_group("output")
    output.add_argument("--format", choices=sorted(FORMATS), default="text",
                        help="text (flake8-compatible, default), json, sarif (GitHub code scanning) "
                        "or github (workflow annotations)")
    output.add_argument("--statistics", action="store_true",
                        help="print the number of findings per code instead of the findings "
                        "(with --format json, as a JSON list)")
    colour = output.add_mutually_exclusive_group()
    colour.add_argument("--color", dest="color", action="store_const", const=True,
                        help="always colour the text output")
    colour.add_argument("--no-color", dest="color", action="store_const", const=False,
                        help="never colour (default: colour on a terminal unless NO_COLOR is set)")
    output.add_argument("--quiet", "-q", action="store_true",
                        help="do not print the summary line on stderr")
    output.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when there are findings (still 2 on errors)")
    add_fix_arguments(parser)
    add_dynamic_arguments(parser)
    return parser


def _comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes, got {text!r}")
    return value


def _jobs(text: str) -> str:
    if text != "auto" and not (text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive number, got {text!r}")
    return text


def _load_config(args: argparse.Namespace, first_path: str) -> Config:
    if args.config is not None:
        if not args.config.is_file():
            raise UsageError(f"--config {args.config}: no such file")
        return load_config(args.config, _warn)
    found = find_config(first_path)
    return load_config(found, _warn) if found else empty_config(os.getcwd())


def _cli_layer(args: argparse.Namespace) -> SelectorLayer:
    def selectors(values: Optional[list[str]], flag: str) -> tuple[str, ...]:
        return parse_selectors(values or [], flag)

    return SelectorLayer(
        select=selectors(args.select, "--select") if args.select is not None else None,
        extend_select=selectors(args.extend_select, "--extend-select"),
        ignore=selectors(args.ignore, "--ignore") + selectors(args.extend_ignore, "--extend-ignore"),
    )


class _Projects:
    """The project of each file to lint (``project_scope``), and each project's other files."""

    def __init__(self, config: Config, spec, paths: list[str], discovered) -> None:
        self.config, self.spec = config, spec
        self.paths, self.discovered = paths, discovered
        self._files: dict[str, tuple[list[str], dict]] = {}
        # Per directory, not per file: a run over torch asks for 2,285 files in 300 directories.
        self._settled_roots: dict[str, Optional[str]] = {}
        self._package_roots: dict[str, Optional[str]] = {}
        self._walked_directories: Optional[list[str]] = None

    def directories_of(self, paths: list[str]) -> list[str]:
        """The directory of each of ``paths`` (a whole walk's computed once)."""
        if paths is self.discovered.files:
            if self._walked_directories is None:
                self._walked_directories = list(map(os.path.dirname, paths))
            return self._walked_directories
        return list(map(os.path.dirname, paths))

    def roots_of(self, paths: list[str]) -> list[Optional[str]]:
        """The project root of each of ``paths`` (files to lint; one may not exist:
        ``--stdin-filename``) by the settings or the repository; None: by neither."""
        from autograd_lint.project_scope import settled_roots_of_directories

        directories = self.directories_of(paths)
        self._settled_roots.update(
            settled_roots_of_directories(list(set(directories) - self._settled_roots.keys()), self.config))
        return [self._settled_roots[directory] for directory in directories]

    def unsettled_files(self, files: list[str]) -> tuple[list[str], dict]:
        """The project of the files no settings or repository place: they are one together,
        with the files of the outermost packages that hold any of them (``project_scope``)."""
        from autograd_lint.project_scope import package_roots_of_directories

        directories = set(self.directories_of(files))
        self._package_roots.update(package_roots_of_directories(list(directories - self._package_roots.keys())))
        paths: list[str] = []
        stats: dict = {}
        for root in sorted({self._package_roots[d] for d in directories} - {None}):
            found, found_stats = self.files_of(root, by_package=True)
            paths += found
            stats.update(found_stats)
        return paths, stats

    def files_of(self, root: str, by_package: bool = False) -> tuple[list[str], dict]:
        """The project's files and their ``os.stat``; a PATH that is the root itself was walked
        already (``autograd-lint .`` at the root): its files are the project's, not walked again."""
        if root not in self._files:
            from autograd_lint.discovery import Discovered
            from autograd_lint.project_scope import project_files

            if any(os.path.isdir(p) and os.path.abspath(p) == root for p in self.paths):
                # A package's project is every file under it; a settled one's, those no subproject takes.
                walked = self.discovered.files
                if by_package:
                    directories = self.directories_of(walked)
                    under = {d: _holds(root, os.path.abspath(d)) for d in set(directories)}
                    files = [f for f, d in zip(walked, directories) if under[d]]
                else:
                    files = [f for f, r in zip(walked, self.roots_of(walked)) if r == root]
                found = Discovered(files, {f: self.discovered.stats[f] for f in files if f in self.discovered.stats})
            else:
                found = project_files(root, self.config, self.spec)
            self._files[root] = (found.files, found.stats)
        return self._files[root]


def _holds(root: str, directory: str) -> bool:
    return directory == root or directory.startswith(root + os.sep)


def _wants_dependents(args: argparse.Namespace, paths: list[str]) -> bool:
    """Report the files that depend on the given ones (``engine.lint_paths``'s ``dependents``):
    when only files are named (pre-commit names the staged files), not directories (a
    directory's run lints what it holds); not when fixing (only the named files are edited) or
    importing them (--dynamic checks the named files)."""
    return (not args.no_dependents and not (args.fix or args.diff or args.dynamic)
            and all(os.path.isfile(path) for path in paths))


def _lint(files: list[str], selection_for: RulesPerFile, max_file_size: int, jobs: int,
          cache_dir: Optional[str], stats: Optional[dict] = None, projects: Optional[_Projects] = None,
          dependents: bool = False, annotate_fixes: bool = True) -> list:
    """One engine run: each file is judged with the facts of its own project. ``dependents``:
    the results of the project files that depend on them follow (``engine.lint_paths``).
    ``annotate_fixes``: set ``fix_available`` (``engine.lint_projects``)."""
    from autograd_lint.engine import lint_projects

    groups: dict[Optional[str], list[int]] = {}
    for i, root in enumerate(projects.roots_of(files) if projects is not None else [None] * len(files)):
        groups.setdefault(root, []).append(i)
    layout, all_stats = [], dict(stats or {})
    for root, indexes in groups.items():
        group = files if len(indexes) == len(files) else [files[i] for i in indexes]
        if projects is None:
            project_paths, project_stats = [], {}
        elif root is None:
            project_paths, project_stats = projects.unsettled_files(group)
        else:
            project_paths, project_stats = projects.files_of(root)
        layout.append((group, project_paths))
        all_stats = {**project_stats, **all_stats}
    found = lint_projects(layout, selection_for, max_file_size, jobs=jobs, cache_dir=cache_dir, stats=all_stats,
                          dependents=dependents and projects is not None, annotate_fixes=annotate_fixes)
    results: list = [None] * len(files)
    depending: list = []
    for indexes, group_results in zip(groups.values(), found):
        for i, result in zip(indexes, group_results):
            results[i] = result
        depending += group_results[len(indexes):]
    results = [_with_related_shown(result) for result in results]
    from dataclasses import replace

    return results + [_with_related_shown(replace(result, path=_shown(result.path),
                                                  findings=[f.with_path(_shown(f.path)) for f in result.findings]))
                      for result in depending]


def _with_related_shown(result):
    """The paths of the findings' related locations (another file of the project, from its
    walk: absolute) as ``_shown`` shows a dependent's."""
    if not any(f.related for f in result.findings):
        return result
    from dataclasses import replace

    return replace(result, findings=[
        replace(f, related=tuple(replace(r, path=_shown(r.path)) for r in f.related)) if f.related else f
        for f in result.findings])


def _shown(path: str) -> str:
    """A dependent's path (the project walk's, absolute) as the given files are usually named:
    relative to the current directory when it lies below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


def _start_dynamic(args: argparse.Namespace, config: Config):
    from autograd_lint.dynamic.runner import DynamicError, options_from, start_session

    try:
        options = options_from(args, config, _jobs_for(args.jobs))
    except DynamicError as error:
        raise UsageError(str(error)) from None
    return start_session(options)


def _run_dynamic(results: list, args: argparse.Namespace, session, selection_for: RulesPerFile, files: list[str]):
    from autograd_lint.dynamic.runner import run_dynamic, write_report

    outcome = run_dynamic(results, selection_for, session.options, files, session)
    for message in outcome.notices:  # every class it could not check, and why; even with --quiet
        _warn(f"--dynamic: {message}")
    if args.dynamic_report:
        write_report(args.dynamic_report, outcome)
    return outcome


def _jobs_for(value: str) -> int:
    from autograd_lint.engine import default_jobs

    return default_jobs() if value == "auto" else int(value)


def _cache_dir(args: argparse.Namespace, config: Config) -> Optional[str]:
    if args.no_cache:
        return None
    if args.cache_dir:
        return args.cache_dir
    return str(config.root / (config.cache_dir or DEFAULT_CACHE_DIR))


def _write_report(run: LintRun, args: argparse.Namespace, out: TextIO) -> None:
    """The report on ``out``. A reader that has gone (`autograd-lint src | head -2`) ends it
    quietly: the run still exits with the status its findings give, as ruff and flake8 do."""
    color = _use_color(args.color, out)
    try:
        if args.statistics:
            from autograd_lint.report import statistics

            statistics.write(run, out, color, as_json=args.format == "json")
        else:
            formatter(args.format)(run, out, color)
        out.flush()  # surface a closed pipe here
    except BrokenPipeError:
        if out is sys.stdout:
            _discard_stdout()


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that nothing more (the interpreter's own final flush
    included) writes into the closed pipe."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (a test's StringIO)
        pass


def _use_color(choice: Optional[bool], out: TextIO) -> bool:
    if choice is not None:
        return choice
    # https://no-color.org: any non-empty NO_COLOR disables colour.
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return out.isatty()


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


if __name__ == "__main__":
    # `python -m autograd_lint.cli PATH` runs the command too, as `python -m autograd_lint` does
    # (no other module imports this one, so running this __main__ copy is running the CLI).
    run()
