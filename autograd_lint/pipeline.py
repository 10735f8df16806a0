"""Linting one file: read -> summary -> syntax tree -> project facts -> module model -> rules ->
suppressions -> ``fix_available``.

The lint of a file depends on facts from the other files (which classes are Function classes,
who calls ``.apply``), so it comes in three steps, and the engine merges every file's facts
between the second and the third:
1. ``summary_of``: the file's text summary (``precheck``), no parse: does the file matter?
2. ``facts_of``: its syntax tree, and what it says that other files need (``FileFacts``);
3. ``lint_file``: its model for the project's facts, every enabled rule, the suppressions, and
   which findings a fixer can fix.
``Pipeline`` runs the steps over the files one process is given, keeping each file's
``SourceFile`` (its text, syntax tree and statement walk) from one step to the next, so nothing is
read or parsed twice; the engine hands its step methods to the worker pool
(``autograd_lint.parallel``) by reference.

The models, the rules and libcst are imported by the third step (``load_the_analysis``): a run
answered from the cache never loads them.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Iterator, Optional, Sequence, Union

from autograd_lint.analysis.precheck import TextSummary, summarize
from autograd_lint.analysis.project import FileFacts, ProjectFacts, facts_from_index
from autograd_lint.analysis.source_file import SourceFile
from autograd_lint.catalogue import RULES
from autograd_lint.findings import FileResult, Finding
from autograd_lint.fix.options import FIXABLE_CODES

# Deep enough for any hand-written expression; the RecursionError beyond it is reported.
_RECURSION_LIMIT = 10_000


@dataclass
class Summary:
    """Step 1's answer for one file: its content hash and text summary, or why it is unreadable."""

    digest: Optional[str] = None
    summary: Optional[TextSummary] = None
    error: Optional[Finding] = None


Facts = Union[FileFacts, Finding]  # step 2's answer: the file's facts, or its AGL000


# --- the steps, for one file ------------------------------------------------------------------

def summary_of(source: SourceFile) -> Summary:
    """Step 1: read the file and summarise its text."""
    if not source.readable():
        return Summary(error=agl000(source.path, source.problem))
    return Summary(source.digest, summarize(source.text))


def facts_of(source: SourceFile, final_names: Optional[frozenset[str]] = None) -> Facts:
    """Step 2: parse the file and say what it tells the other files. ``final_names``: the
    project's Function names when they are already known (the last round: files that only use
    Function classes or call gradcheck); the file then keeps only what its lint needs
    (``SourceFile.keep_only_index``)."""
    if source.tree is None:
        return agl000(source.path, source.problem, *source.problem_at)
    facts = facts_from_index(source.facts_index(), source.text, lambda: source.lines)
    if final_names is not None:
        source.keep_only_index(final_names)
    return facts


def lint_file(source: SourceFile, codes: frozenset[str], project: ProjectFacts, honour_noqa: bool = True,
              annotate_fixes: bool = True) -> FileResult:
    """Step 3: the findings of the rules ``codes`` on the file, for the project's facts.

    ``honour_noqa``: apply ``# noqa`` comments (flake8 applies them itself). ``annotate_fixes``:
    mark the findings ``--fix`` could fix (``fix_available``): that costs a libcst parse of
    their classes, so it is done only for findings of fixable codes, and cached with them."""
    result = FileResult(source.path)
    if not source.analysable(project):
        if "AGL000" in codes:
            result.findings.append(agl000(source.path, source.problem, *source.problem_at))
        return result
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    try:
        return _lint_analysable(source, codes, project, honour_noqa, annotate_fixes, result)
    except RecursionError:
        # libcst walks nested expressions recursively: a 3,000-term `a + a + ...` is valid
        # Python that it cannot follow. Say so, as for a file Python itself cannot parse.
        result.findings = [agl000(source.path, "could not analyse: expressions nested too deeply")] if (
            "AGL000" in codes) else []
        result.internal_errors = []
        return result
    finally:
        sys.setrecursionlimit(limit)


def _lint_analysable(source: SourceFile, codes: frozenset[str], project: ProjectFacts, honour_noqa: bool,
                     annotate_fixes: bool, result: FileResult) -> FileResult:
    key = (source.path, source.text, codes, honour_noqa) if _LINTS.on else None
    known = _LINTS.get(key) if key is not None else None
    if known is not None and known[0] == project:
        # The very same lint as one done before (``remember_lints``): its result, a copy.
        result = replace(known[1], findings=list(known[1].findings), internal_errors=list(known[1].internal_errors),
                         function_class_sites=list(known[1].function_class_sites))
    else:
        result = _rules_and_suppressions(source, codes, project, honour_noqa, result)
        if key is not None:
            _LINTS[key] = (project, replace(result, findings=list(result.findings),
                                            internal_errors=list(result.internal_errors),
                                            function_class_sites=list(result.function_class_sites)))
    # fix_available.
    if annotate_fixes and any(f.code in FIXABLE_CODES for f in result.findings):
        from autograd_lint.fix.available import annotate

        result.findings = annotate(source, result.findings)
    return result


def _rules_and_suppressions(source: SourceFile, codes: frozenset[str], project: ProjectFacts, honour_noqa: bool,
                            result: FileResult) -> FileResult:
    """The model, every rule of ``codes``, the suppressions: the lint but ``fix_available``."""
    from autograd_lint.rules import RULE_CHECKS
    from autograd_lint.suppression import UNUSED_SUPPRESSION, apply_suppressions, suppression_problems

    path = source.path
    # The module model.
    try:
        module = source.analysis(project)
    except RecursionError:
        raise
    except Exception:  # noqa: BLE001 - a bug of ours must not stop the run
        result.internal_errors.append(f"{path}: analysis failed: {_short_traceback()}")
        return result
    result.function_classes = len(module.classes)
    result.function_class_sites = [(info.name, info.line) for info in module.index.function_classes]
    # The rules.
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
    if "AGL000" in codes:
        # Valid Python (ast parsed it) that libcst's grammar does not accept: reported as for a
        # file that cannot be parsed, on the class line; the other classes are still linted.
        findings.extend(
            agl000(path, f"could not analyse class {name}: valid Python that libcst cannot parse "
                   "(its grammar lags CPython's; a line holding only a backslash is one case)", line)
            for line, name in module.unparsed
        )
    findings = _without_restated(findings)
    # The suppressions (nothing to suppress in a file without findings: its lines are not even split).
    spans = [
        (m.info.node.lineno, min([m.info.node.lineno] + [d.lineno for d in m.info.node.decorator_list]),
         m.info.node.end_lineno or m.info.node.lineno)
        for m in module.classes
    ]
    # Line 0: code of another file (a base class's method this file's class inherits): never
    # reported here (the base's own file reports it), and no suppression here is used by it.
    findings = [f for f in findings if f.line > 0]
    if UNUSED_SUPPRESSION in codes:  # judged on every finding, before any is suppressed
        findings.extend(suppression_problems(findings, path, source.text, spans, codes,
                                             {m.info.node.lineno: m.name for m in module.classes}))
    result.findings = sorted(set(apply_suppressions(findings, module.lines, spans, honour_noqa))) if findings else []
    return result


class _Lints(dict):
    """Lints done inside ``remember_lints``: (path, text, codes, honour_noqa) -> (the project
    facts they were done for, the result without ``fix_available``)."""

    on = False


_LINTS = _Lints()


@contextmanager
def remember_lints() -> Iterator[None]:
    """Within: a lint of a file whose path, text, codes, ``# noqa`` handling and project facts
    (all of them, compared whole) are those of a lint done before gives that lint's result
    rather than linting again: nothing else goes into it (``--fix``: the lint of the written
    file, when its project's facts are those of the file alone, as the last round linted it)."""
    _LINTS.clear()
    _LINTS.on = True
    try:
        yield
    finally:
        _LINTS.clear()
        _LINTS.on = False


# --- the steps, for the files of one process --------------------------------------------------

class Pipeline:
    """Does the steps for the files given to one process, keeping each file's ``SourceFile``
    from one step to the next (the worker pool makes one per worker process)."""

    def __init__(self, max_file_size: Optional[int], annotate_fixes: bool = True, hashing: bool = True) -> None:
        """``hashing``: compute each file's content hash (the cache's key; off without a cache)."""
        self.max_file_size = max_file_size
        self.annotate_fixes = annotate_fixes
        self.hashing = hashing
        self.files: dict[str, SourceFile] = {}

    def _source(self, path: str) -> SourceFile:
        source = self.files.get(path)
        if source is None:
            source = self.files[path] = SourceFile(path, max_file_size=self.max_file_size, hashing=self.hashing)
        return source

    def summarize(self, paths: Sequence[str]) -> list[Summary]:
        results = []
        for path in paths:
            summary = summary_of(self._source(path))
            results.append(summary)
            if summary.summary is not None and not (summary.summary.defines_function
                                                    or summary.summary.mentions_gradcheck):
                del self.files[path]  # most files never matter: read again if one does
        return results

    def facts(self, paths: Sequence[str], final_names: Optional[frozenset[str]] = None) -> list[Facts]:
        return [facts_of(self._source(path), final_names) for path in paths]

    def lint(self, jobs: Sequence[tuple[str, frozenset[str]]], project: ProjectFacts,
             honour_noqa: bool = True) -> list[FileResult]:
        """``jobs``: (path, the codes enabled for it)."""
        results = [lint_file(self._source(path), codes, project, honour_noqa, self.annotate_fixes)
                   for path, codes in jobs]
        for path, _ in jobs:  # done with these: let their trees go
            self.files.pop(path, None)
        return results


def _without_restated(findings: list[Finding]) -> list[Finding]:
    """Drop a finding that another rule's finding on the same line already states
    (``RuleInfo.restated_by``). Done before the suppressions, so one `# noqa` for the finding that
    stays covers the line."""
    if not any(RULES[f.code].restated_by for f in findings if f.code in RULES):
        return findings
    codes_at = {}
    for finding in findings:
        codes_at.setdefault(finding.line, set()).add(finding.code)
    return [f for f in findings
            if f.code not in RULES or not codes_at[f.line].intersection(RULES[f.code].restated_by)]


def load_the_analysis() -> None:
    """Import what step 3 needs (libcst, the models, the rules, the fixers) ahead of time: a
    parallel run does it in the main process, and the workers forked after it share it."""
    try:
        import autograd_lint.analysis.module  # noqa: F401 - libcst, the models
        import autograd_lint.fix.available  # noqa: F401 - fix_available
        import autograd_lint.rules  # noqa: F401
    except Exception:  # noqa: BLE001 - the step that needs them reports it
        pass


# --- messages ---------------------------------------------------------------------------------

def agl000(path: str, message: str, line: int = 1, column: int = 1) -> Finding:
    """A file that cannot be read or parsed: at 1:1, or where Python places its syntax error."""
    return Finding(path=path, line=line, column=column, end_line=line, end_column=column, code="AGL000",
                   message=message)


def _short_traceback() -> str:
    import traceback  # only when something failed

    lines = traceback.format_exc().strip().splitlines()
    return " | ".join(lines[-3:])
