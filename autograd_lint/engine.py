"""Runs the analysis over files: the one entry point the CLI (and the flake8 plugin) call.

1. Summarise each file's text (``precheck.TextSummary``): a regex pass, no parse.
2. Project-wide facts: parse (with ``ast``) only the files whose summary says they may define,
   subclass or use a Function class, or call gradcheck; merge what they say (``ProjectFacts``).
3. Lint those same files: libcst parses only their Function classes, the shared model is built,
   and every enabled rule reads it.
Steps 1 and 2 see every file of the project (``project_scope``; ``lint_paths``'s
``project_paths``), step 3 only the files asked for: a run on a few files judges them as a run
over the whole project would. ``gather_project`` does steps 1 and 2 alone, for the texts the
flake8 plugin and ``autograd-lint -`` lint one at a time (``ProjectSnapshot``).
What each step does to one file is ``autograd_lint.pipeline``'s, and which files each step sees
is ``autograd_lint.run_steps``'s; this module keys the run (``cache.RunMemo``), and answers a run
it has seen with nothing else loaded. Each step's answer is cached by content (``cache.Cache``),
and the steps run in worker processes when there is enough work (``parallel.WorkerPool``).
Serial, parallel, cold and warm runs give the same findings: every step sees the same
``ProjectFacts``.
"""

from __future__ import annotations

import os

from autograd_lint.cache import RunMemo, stamp
from autograd_lint.findings import FileResult
from autograd_lint.selection import CodeSet
from autograd_lint.source import DEFAULT_MAX_FILE_SIZE

# `typing` for type checkers only: a warm run (the cache answers) imports this module, and
# `typing` would be a few percent of it (see selection.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Optional

    from autograd_lint.selection import RuleFilter

# The steps' names, imported from ``run_steps`` on first use (PEP 562): a run the memo answers
# never loads them, nor the analysis behind them.
_FROM_THE_STEPS = frozenset({"lint_text", "gather_project", "ProjectSnapshot", "OthersFacts", "PARALLEL_THRESHOLD"})
__all__ = ["FileResult", "CodeSet", "lint_paths", "lint_projects", "default_jobs", *sorted(_FROM_THE_STEPS)]


def __getattr__(name: str):
    if name in _FROM_THE_STEPS:
        from autograd_lint import run_steps

        return getattr(run_steps, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def lint_paths(
    paths: Sequence[str],
    selection_for: Callable[[str], RuleFilter],
    max_file_size: Optional[int] = DEFAULT_MAX_FILE_SIZE,
    jobs: int = 1,
    cache_dir: Optional[str] = None,
    stats: Optional[dict[str, os.stat_result]] = None,
    project_paths: Sequence[str] = (),
    dependents: bool = False,
) -> list[FileResult]:
    """Lint every file (already discovered) and return one result per file, in order.

    ``selection_for(path)`` gives the codes enabled for that file (select/ignore/per-file-ignores).
    Unreadable, oversized or unparsable files give one AGL000 finding; nothing here raises for
    bad input. ``jobs`` worker processes share the work; ``cache_dir`` enables the cache.
    ``stats``: path -> ``os.stat`` from discovery, the cache's stamps (else the cache stats each
    file itself). ``project_paths``: the other files of their project (``project_scope``): their
    facts count, they are not linted. ``dependents``: also lint the other files whose Function
    classes depend on the given files (``_dependent_results``): their findings follow the
    given files' results, each message naming the given file it depends on.
    """
    return lint_projects([(paths, project_paths)], selection_for, max_file_size, jobs, cache_dir, stats,
                         dependents)[0]


def lint_projects(
    groups: Sequence[tuple[Sequence[str], Sequence[str]]],
    selection_for: Callable[[str], RuleFilter],
    max_file_size: Optional[int] = DEFAULT_MAX_FILE_SIZE,
    jobs: int = 1,
    cache_dir: Optional[str] = None,
    stats: Optional[dict[str, os.stat_result]] = None,
    dependents: bool = False,
    annotate_fixes: bool = True,
) -> list[list[FileResult]]:
    """``lint_paths`` for the files of several projects in one run (the CLI given files of
    several subprojects): ``groups`` holds, per project, the files to lint and the project's
    files. One cache, one worker pool: every file is read in one parallel step, and each
    project's facts judge its own files only. ``dependents``: as ``lint_paths``'s (each
    project's list then holds its given files' results, then its dependents').
    ``annotate_fixes``: False when nothing will read ``fix_available`` (``--diff``: the fix
    driver asks the fixers itself); such results are not stored in the cache, whose results
    must carry it (results read from it do: more than asked for)."""
    stats = stats or {}
    layout = [(list(paths), _others(paths, project_paths)) for paths, project_paths in groups]
    memo, run_key = None, ""
    others_keys: list[str] = []
    if cache_dir:
        others_keys = [_others_key(others, stats, max_file_size) for _, others in layout]
        memo = RunMemo.load(cache_dir)
        run_key = RunMemo.key([_run_key(paths, selection_for, max_file_size, stats, others_key)
                               for (paths, _), others_key in zip(layout, others_keys)] + [dependents])
        if run_key in memo.runs:  # the very same run as before: its result, nothing else loaded
            return [_results_of(paths, stored) for (paths, _), stored in zip(layout, memo.runs[run_key])]
        from autograd_lint.run_steps import with_known_others

        known = with_known_others(layout, others_keys, selection_for, max_file_size, cache_dir, dependents,
                                  annotate_fixes)
        if known is not None:  # a few files of a project whose other files are as last time
            if annotate_fixes:
                memo.save(run_key, [_stored_results(known)])
            return [known]
    from autograd_lint.run_steps import lint_layout

    results = lint_layout(layout, selection_for, max_file_size, jobs, cache_dir, stats, dependents, others_keys,
                          annotate_fixes)
    if memo is not None and annotate_fixes and not any(result.internal_errors for group in results for result in group):
        memo.save(run_key, [_stored_results(group) for group in results])
    return results


def _others(paths: Sequence[str], project_paths: Sequence[str]) -> list[str]:
    """The project's files that are not among ``paths`` (however either spells them)."""
    spelled = set(paths)
    rest = [path for path in project_paths if path not in spelled]  # a run over the whole project: none
    if not rest:
        return []
    given = {os.path.abspath(path) for path in paths}
    # The project's paths come from a walk of its absolute root: already absolute and normal.
    return [path for path in rest if (path if os.path.isabs(path) else os.path.abspath(path)) not in given]


def _others_key(others: Sequence[str], stats: dict, max_file_size: Optional[int]) -> str:
    """The other files of a project and their stamps, as one key (``stats``: discovery's)."""
    if not others:
        return ""
    get = stats.get
    # The stamp's fields inline, not through stamp(): a project of 10,000 files pays this on every
    # run of a few of its files (bench/NOTES.md).
    return RunMemo.key([max_file_size, *[(path, info.st_size, info.st_mtime_ns, info.st_ino)
                                         if (info := get(path)) is not None else (path, stamp(path))
                                         for path in others]])


def _run_key(paths: Sequence[str], selection_for: Callable[[str], RuleFilter], max_file_size: Optional[int],
             stats: dict, others_key: str = "") -> str:
    """Everything a run's results depend on besides the files' bytes, which the stamps stand
    for (as in the per-file layers): the files in order, and the codes selected for each; the
    other files of the project, and their stamps (``others_key``)."""
    code_lists: dict[frozenset[str], str] = {}
    entries: list[tuple] = [max_file_size]
    for path in paths:
        codes = CodeSet.of(selection_for(path)).codes
        listed = code_lists.get(codes)
        if listed is None:
            listed = code_lists[codes] = ",".join(sorted(codes))
        entries.append((path, stamp(path, stats.get(path)), listed))
    entries.append(("project", others_key))
    return RunMemo.key(entries)


def _stored_results(results: list[FileResult]) -> dict[int, FileResult]:
    """Only the results that say something (most files have no finding and no Function)."""
    return {i: result for i, result in enumerate(results)
            if result.findings or result.function_classes or result.internal_errors}


def _results_of(paths: Sequence[str], stored: dict[int, FileResult]) -> list[FileResult]:
    """The given files' results, then those of their dependents (stored after them)."""
    return [stored.get(i) or FileResult(path) for i, path in enumerate(paths)] + [
        stored[i] for i in sorted(stored) if i >= len(paths)]


def default_jobs() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


