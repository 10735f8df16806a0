"""Who does the per-file work, and where: in this process or in worker processes.

A file's work comes in three steps (summarise its text; gather its project facts; lint it) with
a project-wide merge between steps 2 and 3. A ``FileWorker`` keeps each file it was given (its
text, syntax tree and statement walk) from one step to the next, so nothing is read or parsed
twice. ``WorkerPool`` runs the steps in this process for small runs, else in one worker per
process: the trees never travel between processes, only small summaries, facts and results.
In a parallel run:
- step 1 goes mostly to a helper process while this one loads libcst, so that the workers,
  started after that, share the loaded parser (``summarize_while_loading``);
- files are handed out a few at a time as each worker finishes its last ones, the heaviest
  first, and a worker that runs out takes the lightest files left to another
  (``run_shared_out``); the worker that parses a file keeps it for the lint.
"""

from __future__ import annotations

import ast
import gc
import sys
import warnings
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

from autograd_lint.analysis.precheck import TextSummary, summarize
from autograd_lint.analysis.project import FileFacts, ProjectFacts, facts_from_index
from autograd_lint.cache import content_hash
from autograd_lint.findings import Finding
from autograd_lint.fix.options import FIXABLE_CODES
from autograd_lint.source import SourceError, read_bytes, text_of

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    function_classes: int = 0
    # "path: what went wrong" for failures of the linter itself (a rule crashing on this file).
    internal_errors: list[str] = field(default_factory=list)


@dataclass
class Summary:
    """Step 1's answer for one file: its content hash and text summary, or why it is unreadable."""

    digest: Optional[str] = None
    summary: Optional[TextSummary] = None
    error: Optional[Finding] = None


Facts = Union[FileFacts, Finding]  # step 2's answer: the file's facts, or its AGL000


@dataclass
class _File:
    path: str
    text: Optional[str] = None
    digest: Optional[str] = None
    tree: Optional[ast.Module] = None
    skeleton: object = None  # module_index.ModuleSkeleton, once walked
    error: Optional[Finding] = None
    # A file without Function classes keeps only its final index (see FileWorker.facts), built
    # for these project Function names; its syntax tree is let go.
    index: object = None
    index_names: Optional[frozenset[str]] = None


class FileWorker:
    """Does the steps for the files given to it, keeping what one step leaves for the next."""

    def __init__(self, max_file_size: Optional[int], annotate_fixes: bool = True, hashing: bool = True) -> None:
        self.max_file_size = max_file_size
        # The content hash is the cache's key, and nothing else's: a run without a cache skips it.
        self.hashing = hashing
        # Mark the findings --fix could fix (fix_available): costs a whole-file libcst parse, so
        # only for files with findings of fixable codes, and cached with the findings.
        self.annotate_fixes = annotate_fixes
        self.files: dict[str, _File] = {}

    def _file(self, path: str) -> _File:
        if path not in self.files:
            self.files[path] = _File(path)
        return self.files[path]

    def add_text(self, path: str, text: str, tree: Optional[ast.Module] = None) -> None:
        """Take a file whose text (and maybe syntax tree) the caller already has."""
        self.files[path] = _File(path, text=text, tree=tree)

    def summarize(self, paths: Sequence[str]) -> list[Summary]:
        results = []
        for path in paths:
            file = self._file(path)
            if self._read(file):
                summary = summarize(file.text)
                results.append(Summary(file.digest, summary))
                if not (summary.defines_function or summary.mentions_gradcheck):
                    del self.files[path]  # most files never matter: read again if one does
            else:
                results.append(Summary(error=file.error))
        return results

    def facts(self, paths: Sequence[str], final_names: Optional[frozenset[str]] = None) -> list[Facts]:
        """Step 2. ``final_names``: the project's Function names when they are already known
        (the last round: files that only use Function classes or call gradcheck). Such a file
        usually defines no Function class, so its lint needs only its index: build that now and
        let the syntax tree go (one large test module's tree is ~100 MB)."""
        from autograd_lint.analysis.module_index import build_module_index, collect_skeleton, light_index

        results: list[Facts] = []
        for path in paths:
            file = self._file(path)
            if not self._parse(file):
                results.append(file.error)
                continue
            file.skeleton = collect_skeleton(file.tree, file.text)
            results.append(facts_from_index(build_module_index(file.tree, file.text, skeleton=file.skeleton,
                                                               instantiations=False)))
            if final_names is not None:
                index = build_module_index(file.tree, file.text, final_names, file.skeleton)
                if not index.function_classes:
                    file.index, file.index_names = light_index(index), final_names
                    file.tree = file.skeleton = None
        return results

    def lint(self, jobs: Sequence[tuple[str, frozenset[str]]], project: ProjectFacts,
             honour_noqa: bool = True) -> list[FileResult]:
        results = [self._lint_one(path, codes, project, honour_noqa) for path, codes in jobs]
        for path, _ in jobs:  # done with these: let their trees go
            self.files.pop(path, None)
        return results

    # --- the pieces ------------------------------------------------------------------------
    def _read(self, file: _File) -> bool:
        if file.text is not None:
            return True
        if file.error is not None:
            return False
        try:
            data = read_bytes(file.path, self.max_file_size)
            file.digest = content_hash(data) if self.hashing else None
            file.text = text_of(data)
        except SourceError as error:
            file.error = agl000(file.path, error.message)
            return False
        return True

    def _parse(self, file: _File) -> bool:
        if file.tree is not None:
            return True
        if not self._read(file):
            return False
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escape sequences and the like
                file.tree = ast.parse(file.text, filename=file.path)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
            file.error = agl000(file.path, _syntax_message(error))
            return False
        return True

    def _lint_one(self, path: str, codes: frozenset[str], project: ProjectFacts, honour_noqa: bool) -> FileResult:
        # The analysis is imported in _analyse: a run answered from the cache never loads libcst.
        file = self._file(path)
        result = FileResult(path)
        if file.index is not None and file.index_names != project.function_names:
            file.index = None  # built for other names (rare): parse again
        if file.index is None and not self._parse(file):
            if file.error is not None and "AGL000" in codes:
                result.findings.append(file.error)
            return result
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
        try:
            return self._analyse(file, codes, project, honour_noqa, result)
        except RecursionError:
            # libcst walks nested expressions recursively: a 3,000-term `a + a + ...` is valid
            # Python that it cannot follow. Say so, as for a file Python itself cannot parse.
            result.findings = [agl000(path, "could not analyse: expressions nested too deeply")] if (
                "AGL000" in codes) else []
            result.internal_errors = []
            return result
        finally:
            sys.setrecursionlimit(limit)

    def _analyse(self, file: _File, codes: frozenset[str], project: ProjectFacts, honour_noqa: bool,
                 result: FileResult) -> FileResult:
        from autograd_lint.analysis.module import analyse_module
        from autograd_lint.rules import RULE_CHECKS
        from autograd_lint.suppression import apply_suppressions

        path = file.path
        try:
            module = analyse_module(path, file.text, file.tree, project, file.skeleton, index=file.index)
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - a bug of ours must not stop the run
            result.internal_errors.append(f"{path}: analysis failed: {_short_traceback()}")
            return result
        result.function_classes = len(module.classes)
        findings: list[Finding] = []
        for code, check in RULE_CHECKS.items():
            if code not in codes:
                continue
            try:
                findings.extend(check(module))
            except RecursionError:
                raise
            except Exception:  # noqa: BLE001 - one rule failing on one file must not stop the others
                result.internal_errors.append(f"{path}: rule {code} failed: {_short_traceback()}")
        spans = [
            (m.info.node.lineno, min([m.info.node.lineno] + [d.lineno for d in m.info.node.decorator_list]),
             m.info.node.end_lineno or m.info.node.lineno)
            for m in module.classes
        ]
        if "AGL000" in codes:
            # Valid Python (ast parsed it) that libcst's grammar does not accept: reported as for a
            # file that cannot be parsed, on the class line; the other classes are still linted.
            findings.extend(
                agl000(path, f"could not analyse class {name}: valid Python that libcst cannot parse "
                       "(its grammar lags CPython's; a line holding only a backslash is one case)", line)
                for line, name in module.unparsed
            )
        # (Nothing to suppress in a file without findings: its lines are not even split.)
        result.findings = sorted(set(apply_suppressions(findings, module.lines, spans, honour_noqa))) if findings else []
        if self.annotate_fixes and any(f.code in FIXABLE_CODES for f in result.findings):
            from autograd_lint.analysis.module import parsed_classes
            from autograd_lint.fix.apply import annotate_text

            result.findings = annotate_text(path, file.text, result.findings, tree=file.tree,
                                            parsed_classes=parsed_classes(module))
        return result


# --- the pool -------------------------------------------------------------------------------

class WorkerPool:
    """Runs a step on all the files, in this process or shared out among worker processes; a
    file stays with the worker that parsed it (which keeps its syntax tree) for the lint."""

    def __init__(self, jobs: int, max_file_size: Optional[int], file_count: int, hashing: bool = True) -> None:
        """``hashing``: compute each file's content hash (the cache's key; off without a cache)."""
        self.jobs = max(1, min(jobs, file_count))
        self.max_file_size, self.hashing = max_file_size, hashing
        self.local: Optional[FileWorker] = FileWorker(max_file_size, hashing=hashing) if self.jobs == 1 else None
        self._executors: list[ProcessPoolExecutor] = []
        self.owners: dict[int, int] = {}  # file index -> worker, once balance() chose one
        self.load: list[tuple[float, float]] = [(0.0, 0.0)] * self.jobs  # see balance()

    @property
    def executors(self) -> list[ProcessPoolExecutor]:
        """One executor per worker process, made when first needed (a run that stays in one
        process, a cached run or pre-commit's few files, never imports multiprocessing); each
        process starts (forks) at its first task."""
        if not self._executors and self.local is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
            self._executors = [ProcessPoolExecutor(1, mp_context=context, initializer=_start_worker,
                                                   initargs=(self.max_file_size, self.hashing))
                               for _ in range(self.jobs)]
        return self._executors

    def summarize_while_loading(self, tasks: list[tuple[int, object]], costs: dict[int, float]) -> dict[int, object]:
        """Step 1 of a parallel run, with the parser loaded once instead of once per worker.

        libcst's import costs 0.3-0.4 s of CPU, a quarter of a worker's share of a cold run
        over torch. Here a helper process (``early_helper``), forked before it is loaded,
        summarises the files while this process loads the parser, the rules and the fixers;
        the workers forked after that have them for nothing, and take the summaries still
        waiting from the other end. Summaries need no parser, and reading the files takes about
        as long as the import, so neither core waits. (Where processes are spawned, not forked,
        workers load the parser themselves: nothing to gain.)"""
        if self.local is not None or not tasks or sys.platform != "linux":
            return self.run_shared_out("summarize", tasks, costs)
        from autograd_lint.early_helper import EarlyHelper

        # Small batches: the step ends when the helper's last one does.
        batches = _batches(tasks, costs, _BATCH_COST / 4)
        try:
            helper = EarlyHelper(batches, self.max_file_size, self.hashing)
        except OSError:  # cannot fork now (a process limit): the workers do it all
            return self.run_shared_out("summarize", tasks, costs)
        try:
            _load_the_analysis()
            answers = _share_out_batches(self.executors, "summarize", batches, helper.claim_from_back)
        except BaseException:  # interrupted: the helper stops after its batch, and is waited for
            helper.stop()
            helper.answers()
            raise
        helped, unanswered = helper.answers()  # a batch both did has the same answers twice
        answers.update(helped)
        if unanswered:  # the helper died: do what it had taken
            left = iter(unanswered)
            answers.update(_share_out_batches(self.executors, "summarize", batches, lambda: next(left, None)))
        return answers

    def worker_of(self, index: int) -> int:
        return self.owners.get(index, index % self.jobs)

    def balance(self, costs: dict[int, tuple[float, float]]) -> None:
        """Give each file that has no owner yet to a worker, so that both steps that follow
        end as early as they can. ``costs``: (parsing it, analysing it), in seconds or in
        any one unit.

        Steps 2 and 3 cost far more per file than step 1 and go to a few files of very
        different sizes (dealt out by index, one worker got twice the other's work on the torch
        package); each step waits for its slowest worker, so the greedy choice (heaviest file
        first) is the worker that keeps the sum of the two steps' slowest loads lowest. A file
        that step 1 read elsewhere is read again by its new owner: little next to parsing it."""
        for index in sorted(costs, key=lambda i: (-sum(costs[i]), i)):
            if index in self.owners:
                continue
            parse, analyse = costs[index]

            def finish(worker: int) -> tuple[float, int]:
                parsing = [p + (parse if w == worker else 0) for w, (p, _) in enumerate(self.load)]
                analysing = [a + (analyse if w == worker else 0) for w, (_, a) in enumerate(self.load)]
                return max(parsing) + max(analysing), worker

            worker = min(finish(w) for w in range(self.jobs))[1]
            self.owners[index] = worker
            self.load[worker] = (self.load[worker][0] + parse, self.load[worker][1] + analyse)

    def run(self, step: str, tasks: list[tuple[int, object]], *extra) -> dict[int, object]:
        """Run ``step`` ("summarize", "facts", "lint") on tasks ``(file index, payload)``; each
        task goes to the worker that owns its file. Returns file index -> answer."""
        if not tasks:
            return {}
        shards: dict[int, list[tuple[int, object]]] = {}
        for index, payload in tasks:
            shards.setdefault(self.worker_of(index), []).append((index, payload))
        if self.local is not None:
            answers = {w: getattr(self.local, step)([p for _, p in shard], *extra) for w, shard in shards.items()}
        else:
            futures = {w: self.executors[w].submit(_run_step, step, [p for _, p in shard], *extra)
                       for w, shard in shards.items()}
            answers = {w: future.result() for w, future in futures.items()}
        return {index: answer for w, shard in shards.items() for (index, _), answer in zip(shard, answers[w])}

    def run_shared_out(self, step: str, tasks: list[tuple[int, object]], costs: dict[int, float],
                       *shared: object) -> dict[int, object]:
        """Like ``run``, but the files are shared out as the step goes: each worker takes the
        files it owns (or that ``balance`` gave it), heaviest first, a few at a time, and a worker
        that runs out takes the lightest files left to another (reading and parsing them itself).
        The worker that answers for a file owns it from then on (it keeps its syntax tree).

        Estimates miss (one large test file's fix_available pass once cost a fifth of the lint
        step on torch, and the machine's speed drifts), and each step waits for its slowest
        worker. ``costs``: file index -> estimated microseconds. ``shared``: the
        step's last arguments (the project facts), sent to each worker once, not with every
        batch."""
        if self.local is not None or not tasks:
            return self.run(step, tasks, *shared)
        from concurrent.futures import FIRST_COMPLETED, wait

        queues: dict[int, deque] = {w: deque() for w in range(self.jobs)}
        for index, payload in sorted(tasks, key=lambda task: -costs.get(task[0], 0.0)):
            queues[self.worker_of(index)].append((index, payload))
        left = {w: sum(costs.get(index, 0.0) for index, _ in queue) for w, queue in queues.items()}
        answers: dict[int, object] = {}
        running: dict[Future, tuple[int, list[int]]] = {}
        told: set[int] = set()  # workers that have the shared arguments

        def batch_for(worker: int) -> list[tuple[int, object]]:
            victim = worker if queues[worker] else max(left, key=lambda w: (left[w], -w))
            queue, batch, cost = queues[victim], [], 0.0
            while queue and cost < _BATCH_COST:
                task = queue.popleft() if victim == worker else queue.pop()
                batch.append(task)
                cost += costs.get(task[0], 0.0)
            left[victim] -= cost
            return batch

        def submit(worker: int) -> None:
            batch = batch_for(worker)
            if batch:
                extra = None if worker in told else shared
                told.add(worker)
                future = self.executors[worker].submit(_run_step_with_shared, step, [p for _, p in batch], extra)
                running[future] = (worker, [index for index, _ in batch])

        for worker in range(self.jobs):
            for _ in range(_BATCHES_IN_FLIGHT):  # the next batch waits in the pipe: no idle gap
                submit(worker)
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                worker, indexes = running.pop(future)
                answers.update(zip(indexes, future.result()))
                self.owners.update((index, worker) for index in indexes)
                submit(worker)
        return answers

    def close(self) -> None:
        for executor in self._executors:
            executor.shutdown(wait=True, cancel_futures=True)


_WORKER: Optional[FileWorker] = None
# Deep enough for any hand-written expression; the RecursionError beyond it is reported.
_RECURSION_LIMIT = 10_000


def _start_worker(max_file_size: Optional[int], hashing: bool) -> None:
    global _WORKER
    gc.disable()  # for the whole process: see autograd_lint/gc_pause.py
    _WORKER = FileWorker(max_file_size, hashing=hashing)


def _batches(tasks: list[tuple[int, object]], costs: dict[int, float], size: float) -> list[list[tuple[int, object]]]:
    """``tasks`` in order, cut into batches of about ``size`` microseconds each."""
    batches: list[list[tuple[int, object]]] = [[]]
    cost = 0.0
    for task in tasks:
        if cost >= size:
            batches.append([])
            cost = 0.0
        batches[-1].append(task)
        cost += costs.get(task[0], 0.0)
    return [batch for batch in batches if batch]


def _share_out_batches(executors: list, step: str, batches: list[list[tuple[int, object]]],
                       next_batch: Callable[[], Optional[int]]) -> dict[int, object]:
    """Each executor takes the next batch (its index from ``next_batch``; None when there are
    no more) as soon as it is done with one (two in flight)."""
    from concurrent.futures import FIRST_COMPLETED, wait

    answers: dict[int, object] = {}
    running: dict = {}

    def submit(executor) -> None:
        index = next_batch()
        if index is not None:
            batch = batches[index]
            running[executor.submit(_run_step, step, [p for _, p in batch])] = (executor, batch)

    for executor in executors:
        for _ in range(_BATCHES_IN_FLIGHT):
            submit(executor)
    while running:
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in done:
            executor, batch = running.pop(future)
            answers.update(zip([index for index, _ in batch], future.result()))
            submit(executor)
    return answers


def _load_the_analysis() -> None:
    try:
        import autograd_lint.analysis.module  # noqa: F401 - libcst, the models
        import autograd_lint.fix.apply  # noqa: F401 - fix_available
        import autograd_lint.rules  # noqa: F401
    except Exception:  # noqa: BLE001 - the step that needs them reports it
        pass


def _run_step(step: str, payloads: list, *extra) -> list:
    return getattr(_WORKER, step)(payloads, *extra)


_SHARED: tuple = ()
# A batch of run_shared_out: files until their estimated cost reaches this (microseconds), so
# that thousands of small files do not each pay a round trip.
_BATCH_COST = 20_000.0
_BATCHES_IN_FLIGHT = 2


def _run_step_with_shared(step: str, payloads: list, shared: Optional[tuple]) -> list:
    """``shared``: the step's last arguments, or None for "as in the previous batch"."""
    global _SHARED
    if shared is not None:
        _SHARED = shared
    return getattr(_WORKER, step)(payloads, *_SHARED)


# --- messages -------------------------------------------------------------------------------

def agl000(path: str, message: str, line: int = 1) -> Finding:
    return Finding(path=path, line=line, column=1, end_line=line, end_column=1, code="AGL000", message=message)


def _syntax_message(error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        where = f" (line {error.lineno}" + (f", column {error.offset})" if error.offset else ")") if error.lineno else ""
        return f"could not parse: {type(error).__name__}: {error.msg}{where}"
    if isinstance(error, (MemoryError, RecursionError)):
        return "could not parse: the file is nested too deeply for the parser"
    return f"could not parse: {error}"


def _short_traceback() -> str:
    import traceback  # only when something failed

    lines = traceback.format_exc().strip().splitlines()
    return " | ".join(lines[-3:])
