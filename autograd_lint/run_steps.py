"""The three steps of a run over files, and which files each one sees (``engine``'s module
docstring tells the steps). ``engine`` answers a run its memo knows without importing this module
(nor the analysis it loads): a cached run over torch is about 20 ms faster for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

from autograd_lint.analysis.names import module_name_of
from autograd_lint.analysis.precheck import TextSummary, summarize
from autograd_lint.analysis.project import FileFacts, ProjectFacts, dependent_classes
from autograd_lint.analysis.source_file import SourceFile
from autograd_lint.cache import OTHERS_FILE_NAME, PROJECT_FILE_NAME, Cache, RunMemo, content_hash, stamp
from autograd_lint.findings import FileResult, Finding, RelatedLocation
from autograd_lint.gc_pause import gc_paused
from autograd_lint.parallel import WorkerPool
from autograd_lint.pipeline import (
    Pipeline, Summary, agl000, facts_of, lint_file, load_the_analysis, summary_of,
)
from autograd_lint.selection import CodeSet
from autograd_lint.source import DEFAULT_MAX_FILE_SIZE

if TYPE_CHECKING:
    from autograd_lint.selection import RuleFilter

# Below this many files to read, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 64


@dataclass
class _State:
    """What the run knows about one file so far."""

    path: str
    digest: Optional[str] = None
    summary: Optional[TextSummary] = None
    error: Optional[Finding] = None  # AGL000: unreadable, or not valid Python
    facts: Optional[FileFacts] = None  # set for the files that matter (step 2)


# A run of at most this many files of a project reuses the facts of its other files when none of
# them changed (``OthersFacts``): an editor or a pre-commit hook on the file just saved.
FEW_FILES = 8


def _few_of_a_project(layout: list[tuple[list[str], list[str]]]) -> bool:
    return len(layout) == 1 and 0 < len(layout[0][0]) <= FEW_FILES and bool(layout[0][1])


@dataclass
class OthersFacts:
    """What the other files of a project said, when a run of a few of its files gathered the
    project's facts: theirs (module, facts), their ``grad_fn`` attributes, and the project's
    Function names then. Kept by the other files' stamps (``_others_key``). A later run of the
    same few files, edited, needs no other file: their facts are these, as long as the project's
    Function names come out the same with the edited files' facts (the names decide which other
    files a gathering parses: ``_gather_project_facts``)."""

    names: frozenset[str]
    facts: list[tuple[Any, FileFacts]]
    grad_fn_attributes: list[tuple[None, FileFacts]]
    paths: list[str]  # the file of each of ``facts``: where a dependent class lies

    @classmethod
    def remember(cls, cache_dir: str, key: str, others: list[_State], project: ProjectFacts) -> None:
        with_facts = [s for s in others if s.facts is not None]
        merged = [(module_name_of(s.path), s.facts) for s in with_facts]
        attributes = [(None, FileFacts(grad_fn_attributes=set(s.summary.grad_fn_attributes))) for s in others
                      if s.summary is not None and s.summary.grad_fn_attributes]
        RunMemo.load(cache_dir, OTHERS_FILE_NAME).save(
            key, cls(project.function_names, merged, attributes, [s.path for s in with_facts]))


def with_known_others(layout: list[tuple[list[str], list[str]]], others_keys: list[str],
                      selection_for: Callable[[str], RuleFilter], max_file_size: Optional[int],
                      cache_dir: str, dependents: bool = False,
                      annotate_fixes: bool = True) -> Optional[list[FileResult]]:
    """The results of a run of a few files of a project whose other files are unchanged since a
    run of the same kind (``OthersFacts``): only the few files are read; None when that does not
    apply, or when their facts change the project's Function names (then the whole gathering
    runs, which may parse other files)."""
    if not _few_of_a_project(layout):
        return None
    known = RunMemo.load(cache_dir, OTHERS_FILE_NAME).runs.get(others_keys[0])
    if not isinstance(known, OthersFacts):
        return None
    states = [_State(path) for path in layout[0][0]]
    pool = WorkerPool(1, len(states), make_state=partial(Pipeline, max_file_size, annotate_fixes, hashing=False),
                      preload=load_the_analysis)
    try:
        _summarize(states, list(range(len(states))), pool, None, {})
        names = known.names
        _collect_facts(states, [i for i, s in enumerate(states) if s.summary is not None and s.error is None and (
            s.summary.defines_function or s.summary.may_subclass(names) or s.summary.may_use(names)
            or _sees_no_package(s))], pool, None)
        project = ProjectFacts.merge(
            [(module_name_of(s.path), s.facts) for s in states if s.facts is not None] + known.facts
            + [(None, FileFacts(grad_fn_attributes=set(s.summary.grad_fn_attributes))) for s in states
               if s.summary is not None and s.summary.grad_fn_attributes] + known.grad_fn_attributes,
            {**{module.name: os.path.abspath(path) for (module, _), path in zip(known.facts, known.paths)},
             **_module_paths(states)})
        if project.function_names != names:
            return None
        results = _lint_all(states, selection_for, project, pool, None, range(len(states)))
        if dependents:  # their files are read now (few: the classes that depend on these files)
            given = len(states)
            states += [_State(path, facts=facts) for path, (_, facts) in zip(known.paths, known.facts)]
            results += _dependent_results(states, range(given), range(given, len(states)), project, selection_for,
                                          pool, None)
        return results
    finally:
        pool.close()


def lint_layout(layout: list[tuple[list[str], list[str]]], selection_for: Callable[[str], RuleFilter],
                max_file_size: Optional[int], jobs: int, cache_dir: Optional[str], stats: dict,
                dependents: bool, others_keys: list[str], annotate_fixes: bool = True) -> list[list[FileResult]]:
    """``engine.lint_projects``'s run when its memo does not know it: ``layout`` holds, per
    project, the files to lint and its other files; ``others_keys``, their stamps' key;
    ``annotate_fixes``: as ``lint_projects``'s."""
    with gc_paused():
        cache = Cache.load(cache_dir) if cache_dir else None
        states: list[_State] = []
        spans = []  # per project: the indexes of its files to lint, and of all its files
        for paths, others in layout:
            start = len(states)
            states += [_State(path) for path in [*paths, *others]]
            spans.append((range(start, start + len(paths)), range(start, len(states))))
        unread = _summaries_from_cache(states, cache, stats)
        pool = WorkerPool(jobs if len(unread) >= PARALLEL_THRESHOLD else 1, len(states),
                          make_state=partial(Pipeline, max_file_size, annotate_fixes, hashing=cache is not None),
                          preload=load_the_analysis)
        try:
            _summarize(states, unread, pool, cache, stats)
            results = []
            for linted, everything in spans:
                project = _gather_project_facts(states, pool, cache, everything)
                results.append(_lint_all(states, selection_for, project, pool, cache, linted,
                                         store=annotate_fixes))
                if dependents:
                    others = range(linted.stop, everything.stop)
                    results[-1] += _dependent_results(states, linted, others, project, selection_for, pool, cache)
        finally:
            pool.close()
        if cache_dir and _few_of_a_project(layout):
            OthersFacts.remember(cache_dir, others_keys[0], states[len(layout[0][0]):], project)
    if cache is not None:
        cache.save()
    return results


def lint_text(path: str, text: str, selection: RuleFilter,
              project: Union[ProjectFacts, "ProjectSnapshot", None] = None,
              honour_noqa: bool = True, tree=None, annotate_fixes: bool = True,
              source: Optional[SourceFile] = None, other_texts: Sequence[tuple[str, str]] = ()) -> FileResult:
    """Lint one file's text (the flake8 plugin's entry point, and ``autograd-lint -``). Without
    ``project`` the file is its own project: facts from other files are not known. With a
    ``ProjectSnapshot`` (``gather_project``), the text's own facts replace those of the file
    ``path`` on disk (an editor's unsaved buffer), and so do ``other_texts``' ((path, text) of
    other files of the project: the editor's other unsaved buffers). ``tree``: the file's
    ``ast``, when the caller has parsed it already (flake8 has). ``source``: a ``SourceFile`` of
    ``text`` the caller keeps (the fix driver: its next round reads the libcst trees of the
    classes this lint parsed)."""
    if source is None:
        source = SourceFile(path, text=text, tree=tree, hashing=isinstance(project, ProjectSnapshot))
    summary = summary_of(source)
    state = _State(path, summary.digest, summary.summary, summary.error)
    codes = CodeSet.of(selection).codes
    if isinstance(project, ProjectSnapshot):
        project = project.facts_with(state, source, [_text_state(p, t) for p, t in other_texts if p != path])
    elif project is None:
        if state.summary is not None and (_matters(state.summary, ProjectFacts()) or _sees_no_package(state)):
            _as_facts(state, facts_of(source))
        project = _merge([state])
    if state.summary is None or not (_matters(state.summary, project) or _sees_no_package(state)):
        return _unlinted_result(state, codes)
    return lint_file(source, codes, project, honour_noqa, annotate_fixes)


def _text_state(path: str, text: str) -> tuple[_State, SourceFile]:
    """A text given for the file ``path``, summarised (step 1), with its ``SourceFile``."""
    source = SourceFile(path, text=text, hashing=True)
    summary = summary_of(source)
    return _State(path, summary.digest, summary.summary, summary.error), source


class ProjectSnapshot:
    """The facts of a project's files as they are on disk, gathered once (``gather_project``)
    for linting texts of it one at a time: the flake8 plugin, ``autograd-lint -``. Kept whole
    in the cache directory, by the files' metadata: a warm run reads that one file."""

    def __init__(self, states: list[_State], facts: ProjectFacts) -> None:
        self.states = states
        self.facts = facts
        self.index = {os.path.abspath(state.path): i for i, state in enumerate(states)}

    def may_matter(self, text: str) -> bool:
        """Can a text of the project that names neither Function nor gradcheck have findings? Only
        by subclassing or using one of the project's Function classes."""
        return bool(self.facts.function_names) and _matters(summarize(text), self.facts)

    def facts_with(self, text_state: _State, source: SourceFile,
                   others: Sequence[tuple[_State, SourceFile]] = ()) -> ProjectFacts:
        """The project's facts with ``source`` (a text given for the file at its path) in place
        of that file on disk, and each of ``others`` in place of its own; ``text_state``: the
        text's summary, given its facts here."""
        texts = [(text_state, source), *others]
        parsed = [self._parsed_if_seen(state, text) for state, text in texts]
        if all(answer is _UNSEEN for answer in parsed):
            return self.facts  # as on disk, or edited in nothing the other files see
        # Gathered again, as a run over the project with these texts on disk would: the facts
        # known so far come from memory (by content hash), the texts' too.
        memory = Cache("")
        memory.facts = {s.digest: s.facts for s in self.states if s.facts is not None and s.digest}
        states = [_State(s.path, s.digest, s.summary, s.error if s.summary is None else None) for s in self.states]
        for (state, _), answer in zip(texts, parsed):
            if answer is _UNSEEN:
                continue  # its file on disk says the same to the other files
            if isinstance(answer, FileFacts):
                memory.facts[state.digest] = answer
            elif isinstance(answer, Finding):
                memory.facts[state.digest] = (answer.message, answer.line, answer.column)
            fresh = _State(state.path, state.digest, state.summary, state.error)
            position = self.index.get(os.path.abspath(state.path))
            if position is None:
                states.append(fresh)
            else:
                states[position] = fresh
        pool = WorkerPool(1, len(states), make_state=partial(Pipeline, DEFAULT_MAX_FILE_SIZE, hashing=True))
        try:
            return _gather_project_facts(states, pool, memory)
        finally:
            pool.close()

    def _parsed_if_seen(self, state: _State, source: SourceFile):
        """The text's parsed facts (or its AGL000, or None when it cannot be read) when the
        other files would see it differ from its file on disk; ``_UNSEEN`` when they would not."""
        position = self.index.get(os.path.abspath(state.path))
        on_disk = self.states[position] if position is not None else None
        state.digest = content_hash(source.text.encode("utf-8", "surrogatepass"))
        if on_disk is not None and on_disk.digest == state.digest and on_disk.error is None:
            state.facts = on_disk.facts
            return _UNSEEN  # the file as it is on disk (flake8 over saved files)
        parsed = facts_of(source) if state.summary is not None else None
        if on_disk is not None and isinstance(parsed, FileFacts) and on_disk.error is None and (
                on_disk.summary is not None and on_disk.summary.grad_fn_attributes == state.summary.grad_fn_attributes
                and (on_disk.facts == parsed if _matters(state.summary, self.facts) else on_disk.facts is None)):
            return _UNSEEN  # edited, but not in anything the other files see
        return parsed


# ``ProjectSnapshot._parsed_if_seen``'s answer for a text the other files see as on disk.
_UNSEEN = object()


def gather_project(paths: Sequence[str], max_file_size: Optional[int] = DEFAULT_MAX_FILE_SIZE,
                   cache_dir: Optional[str] = None, stats: Optional[dict[str, os.stat_result]] = None,
                   jobs: int = 1) -> ProjectSnapshot:
    """Steps 1 and 2 over a project's files (``project_scope.project_files``). Kept in the cache
    directory by every file's path and metadata (size, mtime, inode), as a run's results are: a
    warm run stats the files and reads that one file. Otherwise built from the cache's
    per-file layers, reading only the files they do not know (once: the pre-check of every file,
    and the syntax tree of those that may matter), and saved back."""
    stats = stats or {}
    memo, key = None, ""
    if cache_dir:
        memo = RunMemo.load(cache_dir, PROJECT_FILE_NAME)
        key = RunMemo.key([max_file_size, *((path, stamp(path, stats.get(path))) for path in paths)])
        if key in memo.runs:
            return memo.runs[key]
    with gc_paused():
        cache = Cache.load(cache_dir) if cache_dir else None
        states = [_State(path) for path in paths]
        unread = _summaries_from_cache(states, cache, stats)
        pool = WorkerPool(jobs if len(unread) >= PARALLEL_THRESHOLD else 1, len(states),
                          make_state=partial(Pipeline, max_file_size, hashing=True))
        try:
            _summarize(states, unread, pool, cache, stats)
            facts = _gather_project_facts(states, pool, cache)
        finally:
            pool.close()
    snapshot = ProjectSnapshot(states, facts)
    if cache is not None:
        cache.save()
    if memo is not None:
        memo.save(key, snapshot)
    return snapshot


# --- step 1: summaries ----------------------------------------------------------------------

def _summaries_from_cache(states: list[_State], cache: Optional[Cache], stats: dict) -> list[int]:
    """Fill in what the cache knows of unchanged files; return the indexes still to read."""
    unread = []
    for i, state in enumerate(states):
        digest = cache.known_hash(state.path, stats.get(state.path)) if cache is not None else None
        if digest is not None and digest in cache.summaries:
            state.digest, state.summary = digest, cache.summaries[digest]  # not even read
        else:
            unread.append(i)
    return unread


def _summarize(states: list[_State], unread: list[int], pool: WorkerPool, cache: Optional[Cache],
               stats: dict) -> None:
    costs = {i: _summary_cost(stats.get(states[i].path)) for i in unread}
    answers = pool.summarize_while_loading(Pipeline.summarize, [(i, states[i].path) for i in unread], costs)
    for i, answer in answers.items():
        state: _State = states[i]
        summary: Summary = answer
        state.digest, state.summary, state.error = summary.digest, summary.summary, summary.error
        if cache is not None and summary.summary is not None:
            cache.remember_hash(state.path, summary.digest, stats.get(state.path))
            cache.put(cache.summaries, summary.digest, summary.summary)


def _summary_cost(info: Optional[os.stat_result]) -> float:
    """Microseconds to read and summarise a file: about 0.01 per byte on torch (a file whose
    size is not known counts as a typical 20 kB one)."""
    return 0.01 * info.st_size if info is not None else 200.0


# --- step 2: project-wide facts -------------------------------------------------------------

def _gather_project_facts(states: list[_State], pool: WorkerPool, cache: Optional[Cache],
                          project: Optional[Sequence[int]] = None) -> ProjectFacts:
    """Parse exactly the files that can matter, and merge what they say: files defining a
    ``...Function`` class; then, until nothing changes, files subclassing a Function class found
    so far; then files that call gradcheck or use one of them. ``project``: the indexes of the
    project's files among ``states`` (default: all)."""
    indexes = range(len(states)) if project is None else project

    def pending(wanted: Callable[[TextSummary], bool]) -> list[int]:
        return [i for i in indexes if (s := states[i]).summary is not None and s.facts is None
                and s.error is None and wanted(s.summary)]

    def function_names() -> frozenset[str]:  # the names alone: the workers wait for them
        return frozenset(ProjectFacts.function_names_of(s.facts for i in indexes if (s := states[i]).facts is not None))

    _collect_facts(states, pending(lambda summary: summary.defines_function), pool, cache)
    names = function_names()
    while True:
        new = pending(lambda summary: summary.may_subclass(names))
        if not new:
            break
        _collect_facts(states, new, pool, cache)
        names = function_names()
    _collect_facts(states, pending(lambda summary: summary.may_use(names)), pool, cache, final_names=names)
    # Files in no package whose classes derive from a relatively imported name: nothing here can
    # say what that base is, and AGL002 tells the user (rare: such a file cannot even be imported).
    unseen = [i for i in pending(lambda summary: bool(summary.relative_base_words)) if _sees_no_package(states[i])]
    if unseen:
        _collect_facts(states, unseen, pool, cache)  # (the tree kept: its bases are read in step 3)
    facts = _merge([states[i] for i in indexes])
    modules: dict[int, str] = {}
    for _ in range(4):  # decorators defined in modules nothing else made us read (through re-exports)
        wanted = facts.unread_modules
        if not wanted:
            break
        unread = pending(lambda summary: True)
        if not modules:
            modules = {i: module_name_of(states[i].path).name for i in unread}
        # a module by its name, or a vendored copy of it (`pkg._vendored.fla.utils` for `fla.utils`)
        new = [i for i in unread
               if modules.get(i) in wanted or any(modules.get(i, "").endswith("." + w) for w in wanted)]
        if not new:
            break
        _collect_facts(states, new, pool, cache, final_names=names)
        facts = _merge([states[i] for i in indexes])
    return facts


def _collect_facts(states: list[_State], indexes: list[int], pool: WorkerPool, cache: Optional[Cache],
                   final_names: Optional[frozenset[str]] = None) -> None:
    todo = []
    for i in indexes:
        cached = cache.facts.get(states[i].digest) if cache is not None else None
        if cached is None:
            todo.append(i)
        else:
            _as_facts(states[i], cached)
    costs = {i: _cost(states[i]) for i in todo}
    pool.balance(costs)
    parsing = {i: parse for i, (parse, _) in costs.items()}
    for i, answer in pool.run(Pipeline.facts, [(i, states[i].path) for i in todo], parsing, final_names).items():
        _as_facts(states[i], answer)
        if cache is not None:
            cache.put(cache.facts, states[i].digest, answer if isinstance(answer, FileFacts)
                      else (answer.message, answer.line, answer.column))


def _cost(state: _State) -> tuple[float, float]:
    """What steps 2 and 3 will cost for the file, in microseconds: on torch, parsing took about
    0.4 us per byte of the file, and the analysis 8 us per character of its Function classes."""
    try:
        size = os.path.getsize(state.path)
    except OSError:
        size = 0
    return 0.4 * size, 8.0 * (state.summary.function_chars if state.summary is not None else 0)


def _as_facts(state: _State, answer) -> None:
    """Record step 2's answer (facts, an AGL000 finding, or a cached syntax error: its message,
    line and column)."""
    if isinstance(answer, FileFacts):
        state.facts = answer
    elif isinstance(answer, Finding):
        state.error = answer
    else:
        message, line, column = answer
        state.error = agl000(state.path, message, line, column)


def _merge(states: list[_State]) -> ProjectFacts:
    return ProjectFacts.merge(
        [(module_name_of(s.path), s.facts) for s in states if s.facts is not None]
        + [(None, FileFacts(grad_fn_attributes=set(s.summary.grad_fn_attributes))) for s in states
           if s.summary is not None and s.summary.grad_fn_attributes],
        _module_paths(states),
    )


def _module_paths(states: list[_State]) -> dict[str, str]:
    """Module name -> its file, for the files with facts (where inherited methods lie). Absolute:
    the paths go into the facts' fingerprint (the cache's key), which must not depend on how a
    run spelled them; the CLI shows them relative (``cli._with_related_shown``)."""
    return {module_name_of(s.path).name: os.path.abspath(s.path) for s in states
            if s.facts is not None and s.facts.class_sources}


def _sees_no_package(state: _State) -> bool:
    """Does the file derive a class from a relatively imported name while it lies in no package
    (stdin without ``--stdin-filename``, a file copied alone)? Then the base cannot be found,
    and the file is analysed for AGL002's notice alone."""
    return (state.summary is not None and bool(state.summary.relative_base_words)
            and not module_name_of(state.path).package)


def _matters(summary: TextSummary, project: ProjectFacts) -> bool:
    names = project.function_names
    return summary.defines_function or summary.may_subclass(names) or summary.may_use(names)


# --- step 3: lint ---------------------------------------------------------------------------

def _lint_all(states: list[_State], selection_for: Callable[[str], RuleFilter], project: ProjectFacts,
              pool: WorkerPool, cache: Optional[Cache], linted: Sequence[int], store: bool = True) -> list[FileResult]:
    """The results of the files ``linted`` (indexes among ``states``), in that order. ``store``:
    put new results in the cache (not those without ``fix_available``)."""
    fingerprint = project.fingerprint() if cache is not None else ""
    results: dict[int, FileResult] = {}
    todo: list[tuple[int, tuple[str, frozenset[str]]]] = []
    keys: dict[int, tuple[str, str, str]] = {}
    for i in linted:
        state = states[i]
        if state.error is None and state.facts is None:
            results[i] = FileResult(state.path)  # nothing to look at (most files): no selection to ask
            continue
        codes = CodeSet.of(selection_for(state.path)).codes
        if state.error is not None:
            results[i] = _unlinted_result(state, codes)  # its AGL000
            continue
        # The module's name too: what the file's names mean depends on where it lies (relative
        # imports, its package), and the fingerprint covers what every other file says.
        keys[i] = (state.digest, f"{fingerprint}:{module_name_of(state.path).key()}", ",".join(sorted(codes)))
        cached = cache.results.get(keys[i]) if cache is not None else None
        if cached is not None:
            results[i] = _with_path(cached, state.path)
        else:
            todo.append((i, (state.path, codes)))
    costs = {i: _cost(states[i]) for i, _ in todo}
    pool.balance(costs)  # files whose facts came from the cache
    for i, result in pool.run(Pipeline.lint, todo, {i: sum(c) for i, c in costs.items()}, project).items():
        results[i] = result
        if cache is not None and store and not result.internal_errors:
            cache.put(cache.results, keys[i], _with_path(result, ""))
    return [results[i] for i in linted]


def _unlinted_result(state: _State, codes: frozenset[str]) -> FileResult:
    """The result of a file that is not analysed: its AGL000, or nothing at all."""
    result = FileResult(state.path)
    if state.error is not None and "AGL000" in codes:
        result.findings.append(state.error)
    return result


def _with_path(result: FileResult, path: str) -> FileResult:
    return replace(result, path=path, findings=[f.with_path(path) for f in result.findings],
                   internal_errors=list(result.internal_errors))


# --- dependents: other files whose verdict the given files decide ---------------------------

def _base_class_place(state: _State, name: str, what: str) -> tuple[RelatedLocation, ...]:
    """The ``class`` line of the base class ``name`` in the given file ``state``, as the facts
    keep it (``FileFacts.class_sources``: a class with autograd methods); none when they do not."""
    source = state.facts.class_sources.get(name) if name and state.facts is not None else None
    if source is None:
        return ()
    for offset, line in enumerate(source.text.splitlines()):
        if line.startswith("class "):
            return (RelatedLocation(state.path, source.line + offset, source.column + 1, f"{what} here"),)
    return ()


# Findings that no base class or .apply call can cause: whether a gradcheck reaches the class.
_NOT_CAUSED_BY_OTHERS = frozenset({"AGL502"})


def _dependent_results(states: list[_State], given: Sequence[int], others: Sequence[int], project: ProjectFacts,
                       selection_for: Callable[[str], RuleFilter], pool: WorkerPool,
                       cache: Optional[Cache]) -> list[FileResult]:
    """The findings of the Function classes in ``others`` (indexes among ``states``, facts known)
    that depend on the ``given`` files (``project.dependent_classes``: a subclass of a class
    there, a class whose ``.apply`` calls are there), each message naming the given file.
    Every finding of such a class (AGL502 aside), not only those a change would cause: which
    ones a change causes needs the file as it was, which a run does not have. Only the files
    holding such a class are read and linted; one result per file with findings."""
    if not others:  # a run over the whole project: no file left to depend on the given ones
        return []
    given_modules = {module_name_of(states[i].path).name: i for i in given}
    why = dependent_classes(project, [(module_name_of(states[i].path), states[i].facts) for i in given
                                      if states[i].facts is not None])
    if not why:
        return []
    wanted: dict[int, dict[str, tuple[str, str, str]]] = {}  # file -> its dependent classes -> why
    for i in others:
        facts = states[i].facts
        if facts is None or not facts.classes:
            continue
        module = module_name_of(states[i].path).name
        for name, *_ in facts.classes:
            reason = why.get(f"{module}.{name}")
            if reason is not None:
                wanted.setdefault(i, {})[name] = reason
    if not wanted:
        return []
    files = sorted(wanted)
    results = []
    for i, result in zip(files, _lint_all(states, selection_for, project, pool, cache, files)):
        findings = []
        for finding in result.findings:
            reason = wanted[i].get(finding.function_class or "")
            if reason is not None and finding.code not in _NOT_CAUSED_BY_OTHERS:
                module, what, base = reason
                cause = states[given_modules[module]]
                note = f" (found through {cause.path}: {what} there)"
                findings.append(replace(finding, message=finding.message + note,
                                        related=finding.related + _base_class_place(cause, base, what)))
        if findings or result.internal_errors:
            results.append(FileResult(result.path, findings, internal_errors=result.internal_errors))
    return results
