"""An ``ast`` for a file written for a newer Python than the one running the linter.

``ast.parse`` accepts the syntax of the running interpreter only, so under Python 3.11 a file
that uses 3.12's type parameters (``def first[T](xs)``, ``class Box[T]``), ``type`` aliases or
the f-strings of PEP 701 (``f"{"nested"}"``) would be "could not parse", while under 3.12 it is
linted. libcst reads every one of them whatever runs it; the rules analyse its tree. Only the
index (class names, bases, calls) needs the ``ast``, and none of these constructs matters to it.
So the text is rewritten into older syntax of exactly the same layout, and that is parsed:

- ``type Name[T] = value`` becomes ``Name        = value`` (a plain assignment);
- the type parameters ``[T, *Ts, **P]`` of a ``def`` or ``class`` become spaces;
- an f-string the running Python cannot parse becomes a plain string literal of the same length.

Every line keeps its length, so every line and column of the ``ast`` is the original's. A file
libcst cannot parse either, or one whose rewrite still fails, keeps the original SyntaxError.
Used only after ``ast.parse`` has failed: a file that parses costs nothing.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

CodeEdit = tuple[int, int, int, int, str]  # (line, column, end line, end column, replacement), 1-based lines


# A line the running Python may refuse only for newer syntax: a type alias, type parameters,
# an f-string (PEP 701).
NEWER_SYNTAX_LINE = re.compile(r"^\s*(type\s+\w+|(async\s+)?def\s+\w+\s*\[|class\s+\w+\s*\[)|\b[fFrR]{1,2}['\"]")
_TYPE_ALIAS = re.compile(r"^(\s*)type(\s+)(\w+)(\s*\[.*?\])?(\s*)=")
_TYPE_PARAMETERS = re.compile(r"^(\s*(?:async\s+)?def\s+\w+\s*|\s*class\s+\w+\s*)(\[.*?\])(?=\s*[(:])")


def error_in_older_layout(text: str) -> Optional[SyntaxError]:
    """For a file libcst cannot parse either: the running Python's error once the type aliases
    and type parameters are rewritten line by line (same layout), or None if it then parses.
    The running Python stops at the first newer construct; this is where the real error is, as
    a newer Python reports it. (libcst's own error positions are too rough to report.)"""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        line = _TYPE_ALIAS.sub(lambda m: m.group(1) + m.group(3) + " " * (len(m.group(0)) - len(m.group(1))
                                                                        - len(m.group(3)) - 1) + "=", line)
        lines[index] = _TYPE_PARAMETERS.sub(lambda m: m.group(1) + " " * len(m.group(2)), line)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse("".join(lines))
    except SyntaxError as error:
        return error
    except (ValueError, MemoryError, RecursionError):
        return None
    return None


def parse_newer(text: str, path: str = "<unknown>") -> Optional[ast.Module]:
    """The ``ast`` of ``text`` rewritten into the running Python's syntax, or None."""
    try:
        wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
    except Exception:  # noqa: BLE001 - libcst rejects it too: the original error stands
        return None
    edits = _Downlevel(wrapper.resolve(PositionProvider))
    wrapper.module.visit(edits)
    if edits.impossible or not edits.edits:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(_apply(text, edits.edits), filename=path)
    except (SyntaxError, ValueError):
        return None


def _apply(text: str, edits: list[CodeEdit]) -> str:
    lines = text.splitlines(keepends=True)
    for line, column, _, end_column, replacement in sorted(edits, reverse=True):  # one-line edits only
        source = lines[line - 1]
        lines[line - 1] = source[:column] + replacement + source[end_column:]
    return "".join(lines)


class _Downlevel(cst.CSTVisitor):
    """Collects the same-length edits; ``impossible`` when a construct spans lines."""

    def __init__(self, positions) -> None:
        super().__init__()
        self.positions = positions
        self.edits: list[CodeEdit] = []
        self.impossible = False

    def _one_line(self, node) -> Optional[tuple[int, int, int]]:
        code_range = self.positions[node]
        if code_range.start.line != code_range.end.line:
            self.impossible = True
            return None
        return code_range.start.line, code_range.start.column, code_range.end.column

    def visit_TypeAlias(self, node) -> bool:
        # `type Name[T] = value`: everything before the value becomes `Name ... = `.
        statement, value = self.positions[node], self.positions[node.value]
        if statement.start.line != value.start.line:
            self.impossible = True
            return False
        name = node.name.value
        width = value.start.column - statement.start.column
        if width < len(name) + 3:
            self.impossible = True
            return False
        replacement = name + " " * (width - len(name) - 2) + "= "
        self.edits.append((statement.start.line, statement.start.column, statement.start.line,
                           value.start.column, replacement))
        return True

    def visit_TypeParameters(self, node) -> bool:
        span = self._one_line(node)
        if span is not None:
            line, start, end = span
            self.edits.append((line, start, line, end, " " * (end - start)))
        return False

    def visit_FormattedString(self, node) -> bool:
        code = cst.Module([]).code_for_node(node)
        if _parses(code):
            return True  # an f-string the running Python reads: keep it (and look inside)
        span = self._one_line(node)
        if span is not None:
            line, start, end = span
            self.edits.append((line, start, line, end, '"' + "_" * (end - start - 2) + '"'))
        return False


def _parses(expression: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(expression, mode="eval")
    except (SyntaxError, ValueError):
        return False
    return True
