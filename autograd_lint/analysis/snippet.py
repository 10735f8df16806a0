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

    def __init__(self, class_node: cst.ClassDef, positions, line_offset: int, column_offset: int,
                 dedented_lines: frozenset[int]) -> None:
        self.node = class_node
        self._positions = positions
        self._line_offset = line_offset
        self._column_offset = column_offset
        self._dedented_lines = dedented_lines

    def span(self, node: cst.CSTNode) -> Span:
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
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    class_node = next(s for s in module.body if isinstance(s, cst.ClassDef))
    return ParsedClass(class_node, positions, first - 1, indent, frozenset(dedented))
