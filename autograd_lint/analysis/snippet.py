"""Parse one class of a file with libcst, not the whole file.

libcst parses at 3-5 s per MB, so parsing only the Function classes (located by the cheap ``ast``
index) is what keeps autograd-lint fast on large trees. A nested class is dedented before parsing;
positions are mapped back to the file's lines and columns.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider


@dataclass(frozen=True)
class Span:
    line: int  # 1-based, in the file
    column: int  # 1-based, in the file
    end_line: int
    end_column: int


class ParsedClass:
    """A class statement parsed by libcst, with file positions for its nodes."""

    def __init__(self, module: cst.Module, line_offset: int, column_offset: int,
                 dedented_lines: frozenset[int]) -> None:
        self.module = module
        # a class, or a module-level helper function a Function class calls (parse_function)
        self.node = next(s for s in module.body if isinstance(s, (cst.ClassDef, cst.FunctionDef)))
        self._positions = None
        self._line_offset = line_offset
        self._column_offset = column_offset
        self._dedented_lines = dedented_lines

    def span(self, node: cst.CSTNode) -> Span:
        if self._positions is None:
            # Computing positions re-generates the code of the whole class: only worth it for the
            # few classes that have findings, so it waits until a rule asks.
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        code_range: CodeRange = self._positions[node]
        start, end = code_range.start, code_range.end
        return Span(
            line=start.line + self._line_offset,
            column=start.column + 1 + self._shift(start.line),
            end_line=end.line + self._line_offset,
            end_column=end.column + 1 + self._shift(end.line),
        )

    def _shift(self, snippet_line: int) -> int:
        return self._column_offset if snippet_line in self._dedented_lines else 0


class RemoteClass(ParsedClass):
    """A class of another file (a Function base class a subclass here inherits methods from):
    its positions are not this file's, so they are all line 0, which the pipeline never reports."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(module, 0, 0, frozenset())

    def span(self, node: cst.CSTNode) -> Span:
        return Span(0, 0, 0, 0)


def parse_class(lines: list[str], node: ast.ClassDef) -> ParsedClass:
    """Parse the class ``node`` (from the ast index) out of the file's ``lines`` with libcst.

    Raises ``cst.ParserSyntaxError`` if libcst cannot parse it.
    """
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    last = node.end_lineno or node.lineno
    indent = node.col_offset
    snippet_lines = []
    dedented = set()
    for number, text in enumerate(lines[first - 1 : last], start=1):
        prefix = text[:indent]
        if indent and prefix.strip(" \t") == "" and len(prefix) == indent:
            snippet_lines.append(text[indent:])
            dedented.add(number)
        else:  # a line inside a string literal or continuation: keep it as it is
            snippet_lines.append(text)
    source = "".join(snippet_lines)
    if not source.endswith("\n"):
        source += "\n"
    return ParsedClass(cst.parse_module(source), first - 1, indent, frozenset(dedented))


_TOP_LEVEL_DEF = "def {name}("


def parse_function(lines: list[str], name: str) -> "ParsedClass | None":
    """The module-level ``def name(...)`` of a file, parsed alone with libcst (its decorators
    included); None when there is none, more than one, or its lines do not parse alone.

    The function runs from its ``def`` line to the line before the next statement that starts
    at column 0 (what follows it at module level)."""
    starts = [i for i, text in enumerate(lines) if text.startswith(_TOP_LEVEL_DEF.format(name=name))
              or text.startswith("async " + _TOP_LEVEL_DEF.format(name=name))]
    if len(starts) != 1:
        return None
    first = last = starts[0]
    while first > 0 and lines[first - 1].startswith("@"):
        first -= 1
    for i in range(starts[0] + 1, len(lines)):
        text = lines[i]
        if text.strip() and not text[0].isspace() and not text.startswith("#"):
            if text.startswith((")", "]", "}")):  # the end of a multi-line signature
                last = i
                continue
            break
        last = i
    source = "".join(lines[first:last + 1])
    if not source.endswith("\n"):
        source += "\n"
    try:
        return ParsedClass(cst.parse_module(source), first, 0, frozenset())
    except (cst.ParserSyntaxError, StopIteration):
        return None
