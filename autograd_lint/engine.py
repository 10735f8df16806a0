"""Runs the analysis over files: the one entry point the CLI (and the flake8 plugin) call.

Two passes. The first reads every file, keeps those a cheap text check says may matter, and
gathers project-wide facts (Function classes, ``.apply`` call sites, gradcheck calls) from their
``ast``. The second analyses each candidate file: libcst parses only its Function classes, the
shared model is built, and every enabled rule reads it.
"""

from __future__ import annotations

import ast
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Sequence

from autograd_lint.analysis.module import analyse_module
from autograd_lint.analysis.precheck import grad_fn_attributes, may_define_function, may_subclass, may_use_functions, names_pattern, uses_pattern
from autograd_lint.analysis.project import FileFacts, ProjectFacts, facts_from_index
from autograd_lint.analysis.module_index import build_module_index
from autograd_lint.findings import Finding
from autograd_lint.rules import RULE_CHECKS
from autograd_lint.source import DEFAULT_MAX_FILE_SIZE, SourceError, read_source
from autograd_lint.suppression import apply_suppressions


class Selection(Protocol):
    def is_enabled(self, code: str) -> bool: ...


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    function_classes: int = 0
    # "path: what went wrong" for failures of the linter itself (a rule crashing on this file).
    internal_errors: list[str] = field(default_factory=list)


@dataclass
class _Source:
    path: str
    text: Optional[str] = None
    tree: Optional[ast.Module] = None
    error: Optional[Finding] = None


def lint_paths(
    paths: Sequence[str],
    selection_for: Callable[[str], Selection],
    max_file_size: Optional[int] = DEFAULT_MAX_FILE_SIZE,
) -> list[FileResult]:
    """Lint every file (already discovered) and return one result per file, in order.

    ``selection_for(path)`` gives the codes enabled for that file (select/ignore/per-file-ignores).
    Unreadable, oversized or unparsable files give one AGL000 finding; nothing here raises for
    bad input.
    """
    sources = [_load(path, max_file_size) for path in paths]
    project = _gather_project_facts(sources)
    return [_lint_source(source, selection_for(source.path), project) for source in sources]


def lint_text(path: str, text: str, selection: Selection, project: Optional[ProjectFacts] = None,
              honour_noqa: bool = True) -> FileResult:
    """Lint one file's text on its own (the flake8 plugin's entry point)."""
    source = _Source(path, text)
    if project is None:
        project = _gather_project_facts([source])
    elif may_define_function(text) or may_use_functions(text, uses_pattern(project.function_names)):
        _parse(source)
    return _lint_source(source, selection, project, honour_noqa)


def _load(path: str, max_file_size: Optional[int]) -> _Source:
    try:
        return _Source(path, read_source(path, max_file_size))
    except SourceError as error:
        return _Source(path, error=_agl000(path, error.message))


def _gather_project_facts(sources: list[_Source]) -> ProjectFacts:
    """Parse (with ast) exactly the files that can matter, and merge what they say.

    1. files whose class statements name a ``...Function`` base;
    2. then, until nothing changes, files subclassing a Function class found so far;
    3. then files that call gradcheck or name one of the project's Function classes.
    """
    facts: dict[int, FileFacts] = {}

    def parse_into_facts(i: int) -> None:
        _parse(sources[i])
        facts[i] = _facts(sources[i])

    readable = [i for i, s in enumerate(sources) if s.text is not None]
    for i in readable:
        if may_define_function(sources[i].text):
            parse_into_facts(i)
    project = ProjectFacts.merge(facts.values())
    while True:
        bases = names_pattern(project.function_names)
        new = [i for i in readable if i not in facts and may_subclass(sources[i].text, bases)]
        if not new:
            break
        for i in new:
            parse_into_facts(i)
        project = ProjectFacts.merge(facts.values())
    uses = uses_pattern(project.function_names)
    for i in readable:
        if i not in facts and may_use_functions(sources[i].text, uses):
            parse_into_facts(i)
    text_facts = [FileFacts(grad_fn_attributes=grad_fn_attributes(sources[i].text)) for i in readable]
    return ProjectFacts.merge([*facts.values(), *text_facts])


def _parse(source: _Source) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            source.tree = ast.parse(source.text, filename=source.path)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        source.error = _agl000(source.path, _syntax_message(error))


def _facts(source: _Source) -> FileFacts:
    if source.tree is None:
        return FileFacts()
    return facts_from_index(build_module_index(source.tree, source.text))


def _lint_source(source: _Source, selection: Selection, project: ProjectFacts, honour_noqa: bool = True) -> FileResult:
    result = FileResult(source.path)
    if source.error is not None:
        if selection.is_enabled("AGL000"):
            result.findings.append(source.error)
        return result
    if source.tree is None:
        return result  # the text checks say nothing here can matter
    try:
        module = analyse_module(source.path, source.text, source.tree, project)
    except Exception:  # noqa: BLE001 - a bug of ours must not stop the run
        result.internal_errors.append(f"{source.path}: analysis failed: {_short_traceback()}")
        return result
    result.function_classes = len(module.classes)
    for name in module.unparsed:
        result.internal_errors.append(f"{source.path}: libcst could not parse class {name}")
    findings: list[Finding] = []
    for code, check in RULE_CHECKS.items():
        if not selection.is_enabled(code):
            continue
        try:
            findings.extend(check(module))
        except Exception:  # noqa: BLE001 - one rule failing on one file must not stop the others
            result.internal_errors.append(f"{source.path}: rule {code} failed: {_short_traceback()}")
    spans = [
        (m.info.node.lineno, min([m.info.node.lineno] + [d.lineno for d in m.info.node.decorator_list]),
         m.info.node.end_lineno or m.info.node.lineno)
        for m in module.classes
    ]
    result.findings = sorted(set(apply_suppressions(findings, module.lines, spans, honour_noqa)))
    return result


def _agl000(path: str, message: str) -> Finding:
    return Finding(path=path, line=1, column=1, end_line=1, end_column=1, code="AGL000", message=message)


def _syntax_message(error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        where = f" (line {error.lineno}" + (f", column {error.offset})" if error.offset else ")") if error.lineno else ""
        return f"could not parse: {type(error).__name__}: {error.msg}{where}"
    if isinstance(error, (MemoryError, RecursionError)):
        return "could not parse: the file is nested too deeply for the parser"
    return f"could not parse: {error}"


def _short_traceback() -> str:
    lines = traceback.format_exc().strip().splitlines()
    return " | ".join(lines[-3:])
