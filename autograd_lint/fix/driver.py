"""The ``--fix``/``--diff`` driver: fix each file to a fixed point, check the result, then write
it or diff it. A front, as the CLI is: it lints again through the engine.

For each file with fixable findings: ask the fixers, apply the fixes that do not overlap,
lint the new text again (one fix can expose or settle another), and repeat, at most
``MAX_ROUNDS`` times. The result must parse (libcst and ``compile``) or the file is left as it
was. Nothing is written without ``--fix``; with ``--diff`` the changes are printed instead.
A round's whole-module tree is put together from the libcst trees of the file's classes that
the lint before it parsed (``analysis.whole_module``), and so is the check of its result (each
changed class parsed alone, which the next lint reads), where that gives the tree a parse would.

Later rounds lint the file on its own (``engine.lint_text``): facts from other files (an
``.apply`` call elsewhere, a base class in another module) are then unknown, which can only
hide findings, so a later round never fixes something the whole run would not report.
"""

from __future__ import annotations

import argparse
import io
import sys
import tokenize
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, TextIO, Union

import libcst as cst

from autograd_lint.analysis.snippet import offer_class_trees
from autograd_lint.analysis.source_file import SourceFile
from autograd_lint.analysis.whole_module import AssembledModule
from autograd_lint.engine import lint_text
from autograd_lint.findings import Finding
from autograd_lint.fix.available import annotate, fix_for, remember, remember_answers
from autograd_lint.fix.context import FixContext, whole_module
from autograd_lint.fix.edits import Round
from autograd_lint.fix.options import FixOptions, fix_counts
from autograd_lint.fix.registry import FIXERS
from autograd_lint.fix.write import unified_diff, write_atomically
from autograd_lint.pipeline import remember_lints
from autograd_lint.source import SourceError, read_bytes

MAX_ROUNDS = 10


@dataclass
class FileFix:
    """What fixing one file gave: the new text (None when nothing changed) and how many fixes."""

    path: str
    before: str = ""
    after: Optional[str] = None
    encoding: str = "utf-8"
    fixed: int = 0
    error: Optional[str] = None  # one line for stderr: the file was left unchanged
    fixer_failures: list[str] = field(default_factory=list)  # "fixer for AGL201 failed: ..." lines


@dataclass
class Outcome:
    """What the CLI needs back: the results to report, lines for stderr, and an exit code that
    replaces the usual one (``--diff``)."""

    results: list
    summary_lines: list[str] = field(default_factory=list)
    exit_code: Optional[int] = None


def process(results: list, args: argparse.Namespace, selection_for, relint: Callable[[], list],
            out: TextIO, err: TextIO) -> Outcome:
    """Fix (``--fix``) or diff (``--diff``). ``results`` come from the engine, without
    ``fix_available``: the fixers are asked here, and what they answer sets it (for a file left
    as it was) or spares asking them again (the lint after writing: ``remember_answers``). The
    lint after writing takes the last round's lint of a file's text when the file's project
    facts are those the round linted it with (``pipeline.remember_lints``)."""
    with remember_answers(), remember_lints():
        return _process(results, args, selection_for, relint, out, err)


def _process(results: list, args: argparse.Namespace, selection_for, relint: Callable[[], list],
             out: TextIO, err: TextIO) -> Outcome:
    options = FixOptions.from_args(args)
    quiet = getattr(args, "quiet", False)
    file_fixes = [fix_file(result.path, result.findings, selection_for(result.path), options.unsafe)
                  for result in results if any(f.code in FIXERS for f in result.findings)]
    for file_fix in file_fixes:
        for failure in file_fix.fixer_failures:
            print(f"{file_fix.path}: {failure}", file=err)
        if file_fix.error:
            print(f"{file_fix.path}: {file_fix.error}", file=err)
    changed = [f for f in file_fixes if f.after is not None]
    if options.diff:
        for file_fix in changed:
            out.write(unified_diff(file_fix.path, file_fix.before, file_fix.after))
        out.flush()
        count = sum(f.fixed for f in changed)
        print(f"Would fix {count} finding{'' if count == 1 else 's'}." if changed else "No fixes to apply.",
              file=err)
        return Outcome(results, exit_code=1 if changed else 0)
    for file_fix in changed:
        write_atomically(file_fix.path, file_fix.after.encode(file_fix.encoding))
    if changed:
        results = relint()
    else:
        results = [_with_fix_available(result) for result in results]
    _, unsafe = fix_counts(results)
    fixed = sum(f.fixed for f in changed)
    remaining = sum(len(r.findings) for r in results)
    line = f"Fixed {fixed} finding{'' if fixed == 1 else 's'} ({remaining} remaining"
    line += f"; {unsafe} more fixable with --unsafe-fixes)" if unsafe and not options.unsafe else ")"
    return Outcome(results, [] if quiet else [line])


def _with_fix_available(result):
    """``result`` (of a file --fix left as it was) with ``fix_available`` set, from the fixers'
    answers on its text when they were asked (else asked now, as the lint would have)."""
    if not any(f.code in FIXERS for f in result.findings):
        return result
    try:
        source = SourceFile(result.path)
        source.text  # noqa: B018 - read now: SourceError when it cannot be
    except SourceError:
        return result
    try:
        return replace(result, findings=annotate(source, result.findings))
    except RecursionError:  # as the lint: nested too deeply for libcst, then no fix is offered
        return result


def fix_text(path: str, data: bytes, findings: list[Finding], selection, args: argparse.Namespace) -> FileFix:
    """``fix_file`` for a text read from stdin (``autograd-lint - --fix``): the fixes are not
    written anywhere; failures go to stderr as for a file."""
    fixed = fix_file(path, findings, selection, FixOptions.from_args(args).unsafe, data)
    for failure in fixed.fixer_failures:
        print(f"{path}: {failure}", file=sys.stderr)
    if fixed.error:
        print(f"{path}: {fixed.error}", file=sys.stderr)
    return fixed


def fix_file(path: str, findings: list[Finding], selection, unsafe: bool, data: Optional[bytes] = None) -> FileFix:
    """``data``: the file's bytes, when they are not to be read from ``path`` (stdin)."""
    try:
        data = read_bytes(path, None) if data is None else data
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        text = data.decode(encoding)  # utf-8-sig drops the BOM here and writes it back later
    except (SourceError, SyntaxError, LookupError, UnicodeDecodeError) as error:
        return FileFix(path, error=f"cannot fix: {getattr(error, 'message', error)}")
    result = FileFix(path, before=text, encoding=encoding)
    current = text
    source = SourceFile(path, text=text)
    # The libcst tree of ``current``, once checked: parsed whole, or built from the trees of its
    # classes (``whole_module.assemble``, with their positions); None: the first round builds it
    # from the trees of the run's lint.
    module: Union[cst.Module, AssembledModule, None] = None
    for _ in range(MAX_ROUNDS):
        applied, new_text, answers = _one_round(source, findings, unsafe, result.fixer_failures, module)
        if answers is not None:
            remember(path, current, answers)
        if not applied or new_text == current:
            break
        new_source = SourceFile(path, text=new_text)
        problem, module = _verify(new_source, encoding)
        if problem:
            codes = ", ".join(sorted({f.code for f in applied}))
            return FileFix(path, before=text, error=f"fix for {codes} {problem}; file left unchanged",
                           fixer_failures=result.fixer_failures)
        current, result.fixed = new_text, result.fixed + len(applied)
        # The next round reads the file this lint read: its classes are parsed (and their
        # positions known) once for both.
        source = new_source
        if source.tree is not None and isinstance(module, cst.Module):
            offer_class_trees(source.lines, source.tree, module, {f.function_class for f in applied})
        findings = _lint_alone(source, selection)
    result.after = current if current != text else None
    return result


def _one_round(source: SourceFile, findings: list[Finding], unsafe: bool,
               failures: list[str], module: Union[cst.Module, AssembledModule, None] = None,
               ) -> tuple[list[Finding], str, Optional[dict[Finding, Optional[bool]]]]:
    """The findings fixed, the new text, and what the fixers answered for each fixable finding
    (None: no fix; else whether it is safe), None when they could not be asked. ``module``: the
    libcst tree of ``source``'s text when the caller has made it (the check of the last
    round's result), so that this round does not make it again; None: it is built from the
    trees of the classes ``source``'s lint parsed, where that gives the tree a parse would."""
    fixable = sorted(f for f in findings if f.code in FIXERS)
    if not fixable:
        return [], source.text, {}
    # The whole file's libcst tree is parsed when a fixer first needs it: a round whose
    # findings all have no fix (decided on the model and the classes' own trees) never pays
    # for it. A file libcst cannot parse whole gets no fix rather than a wrong one (its
    # grammar lags CPython's); what the fixers said before that is dropped with the round.
    if isinstance(module, AssembledModule):
        context = FixContext(source, assembled=module)
    else:
        context = FixContext(source, module=module, from_class_trees=module is None)
    accepted = Round()
    applied = []
    answers: dict[Finding, Optional[bool]] = {}
    round_failures: list[str] = []
    try:
        for finding in fixable:
            fix = fix_for(context, finding, round_failures)
            answers[finding] = fix.safe if fix is not None else None
            if fix is not None and (fix.safe or unsafe) and accepted.accept(fix, lambda n: _span(context, n)):
                applied.append(finding)
        new_text = (context.code_of(accepted.apply(context.module, context.parents, context.positions))
                    if applied else source.text)
    except cst.ParserSyntaxError:  # the whole module's parse (fix_for lets that one through)
        return [], source.text, None
    failures.extend(line for line in round_failures if line not in failures)
    return applied, new_text, answers


def _span(context: FixContext, node: cst.CSTNode):
    line, column, end_line, end_column = context.span(node)
    return (line, column), (end_line, end_column)


def _verify(source: SourceFile, encoding: str) -> tuple[Optional[str], Union[cst.Module, AssembledModule, None]]:
    """(None, its libcst tree) when ``source``'s text is a module Python and libcst both
    accept; else (why not, None). The tree serves the next round. It is built from the trees of
    the text's classes, each parsed alone (which the next lint reads, rather than parse them
    again), where that gives the tree a whole-module parse would (``whole_module.assemble``:
    then libcst accepts the whole text, since it accepts each piece); else the text is parsed
    whole."""
    text = source.text
    try:
        module = whole_module(source) or cst.parse_module(text)
        compile(text.encode(encoding), source.path, "exec", dont_inherit=True)
    except UnicodeEncodeError:
        return f"would not encode as {encoding}", None
    except (cst.ParserSyntaxError, SyntaxError, ValueError):
        return "would not parse", None
    return None, module


def _lint_alone(source: SourceFile, selection) -> list[Finding]:
    return lint_text(source.path, source.text, selection, annotate_fixes=False, source=source).findings
