"""``fix_available``: which findings of a lint run a fixer can fix, the step of the lint that asks
the fixers without changing anything (``--fix`` itself is ``fix.driver``).

Called by the pipeline for files with findings of fixable codes only, so the answer is cached
with the findings and other files cost nothing more.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator, Optional

import libcst as cst

from autograd_lint.analysis.source_file import SourceFile
from autograd_lint.findings import Finding
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix
from autograd_lint.fix.registry import FIXERS


def annotate(source: SourceFile, findings: list[Finding], focus: bool = True) -> list[Finding]:
    """``findings`` of the file with ``fix_available``/``fix_safe`` set where a fixer can fix
    them. ``focus``: libcst parses only the Function classes of the findings (see
    ``fix.context``), which gives the same answer as the whole module (tests/test_fix_focus.py
    checks it on every fixture). The file's ``ast`` and the libcst trees of its Function
    classes are the ones the lint made (``source``), not made again."""
    fixable = [f for f in findings if f.code in FIXERS]
    known = _ANSWERS.get((source.path, source.text)) if _ANSWERS.on and fixable else None
    if known is not None and all(f in known for f in fixable):
        return [replace(f, fix_available=True, fix_safe=known[f]) if known.get(f) is not None else f
                for f in findings]
    try:
        whole = FixContext(source)
        context = whole.focused(fixable) if focus else whole
        try:
            context.module
        except cst.ParserSyntaxError:
            context = whole  # a blanked-out file libcst reads differently: ask the whole one
            context.module
    except (cst.ParserSyntaxError, RecursionError):
        return findings
    annotated = []
    for finding in findings:
        fix = fix_for(context, finding) if finding.code in FIXERS else None
        if fix is not None:
            finding = replace(finding, fix_available=True, fix_safe=fix.safe)
        annotated.append(finding)
    return annotated


class _Answers(dict):
    """What the fixers answered (None: no fix; else whether it is safe) for the findings of a
    text, by (path, text): ``--fix`` asks them for every fixable finding of the text it ends
    with, and of the text it started from."""

    on = False


_ANSWERS = _Answers()


@contextmanager
def remember_answers() -> Iterator[None]:
    """Within: ``annotate`` takes the fixers' answers that ``remember`` kept for the very same
    path, text and findings rather than asking them again (``--fix``: the lint after writing
    the files, and the run's own lint, which did not ask, for a file left unchanged). An answer
    depends on nothing else: the fixers read the file alone (``FixContext.analysis``), and a
    whole-module context answers as a focused one does (tests/test_fix_focus.py)."""
    _ANSWERS.clear()
    _ANSWERS.on = True
    try:
        yield
    finally:
        _ANSWERS.clear()
        _ANSWERS.on = False


def remember(path: str, text: str, answers: dict[Finding, Optional[bool]]) -> None:
    """Keep the fixers' ``answers`` for the findings of ``text`` (only inside ``remember_answers``)."""
    if _ANSWERS.on:
        _ANSWERS[(path, text)] = answers


def fix_for(context: FixContext, finding: Finding, failures: Optional[list[str]] = None) -> Optional[Fix]:
    """The fixer's answer; a fixer that fails on odd code offers no fix rather than stopping
    the run (the finding is still reported, fix_available false). It is a bug all the same:
    with ``failures`` (``--fix``/``--diff``) one line about it is kept for stderr, once.
    The context's module failing to parse is not the fixer's failure: that error goes through
    (the caller decides: the --fix driver then fixes nothing in the file)."""
    try:
        return FIXERS[finding.code](context, finding)
    except Exception as error:  # noqa: BLE001 - see the docstring
        if error is context.module_error:
            raise
        if failures is not None:
            lines = str(error).strip().splitlines()
            line = f"fixer for {finding.code} failed: {type(error).__name__}" + (f": {lines[0]}" if lines else "")
            if line not in failures:
                failures.append(line)
        return None
