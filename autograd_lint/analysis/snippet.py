"""Parse one class of a file with libcst, not the whole file.

libcst parses at 3-5 s per MB, so parsing only the Function classes (located by the cheap ``ast``
index) is what keeps autograd-lint fast on large trees. A nested class is dedented before parsing;
positions are mapped back to the file's lines and columns.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from contextlib import contextmanager
from typing import Iterator, Optional

import libcst as cst

from autograd_lint.analysis.positions import Position, node_positions
from autograd_lint.analysis.syntax import parse_module


@dataclass(frozen=True)
class Span:
    line: int  # 1-based, in the file
    column: int  # 1-based, in the file
    end_line: int
    end_column: int


class SnippetTree:
    """The libcst module of a snippet's text and, once asked, its nodes' positions in it: what
    does not depend on where in a file the snippet stands, so texts with the same class can
    share it (``remember_class_trees``)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._positions: Optional[dict[cst.CSTNode, Position]] = None
        # id(node) -> what the model derives from that node of this tree alone (a method's own
        # nodes, by class): kept with the tree, so that a remembered tree (``remember_class_trees``:
        # the language server's next lint, a --fix round) does not walk it again.
        self.derived: dict[int, dict] = {}

    @property
    def positions(self) -> dict[cst.CSTNode, Position]:
        if self._positions is None:
            # Computing positions re-generates the code of the whole class: only worth it for the
            # few classes that have findings, so it waits until a rule asks.
            self._positions = node_positions(self.module)
        return self._positions


class ParsedClass:
    """A class statement parsed by libcst, with file positions for its nodes."""

    def __init__(self, module: cst.Module, line_offset: int, column_offset: int,
                 dedented_lines: frozenset[int], tree: Optional[SnippetTree] = None) -> None:
        """``tree``: the module's ``SnippetTree`` when it is shared (else one of its own)."""
        self._tree = tree if tree is not None else SnippetTree(module)
        self.module = module
        # a class, or a module-level helper function a Function class calls (parse_function)
        self.node = next(s for s in module.body if isinstance(s, (cst.ClassDef, cst.FunctionDef)))
        self._line_offset = line_offset
        self._column_offset = column_offset
        self._dedented_lines = dedented_lines

    @property
    def tree(self) -> SnippetTree:
        """The tree it was parsed into, with its positions (shared by the texts it serves)."""
        return self._tree

    def derived(self, node: cst.CSTNode) -> dict:
        """The store of what is derived from ``node`` of this tree alone (``SnippetTree.derived``)."""
        return self._tree.derived.setdefault(id(node), {})

    def span(self, node: cst.CSTNode) -> Span:
        line, column, end_line, end_column = self._tree.positions[node]
        return Span(
            line=line + self._line_offset,
            column=column + 1 + self._shift(line),
            end_line=end_line + self._line_offset,
            end_column=end_column + 1 + self._shift(end_line),
        )

    def _shift(self, snippet_line: int) -> int:
        return self._column_offset if snippet_line in self._dedented_lines else 0


class RemoteClass(ParsedClass):
    """A class of another file (a Function base class a subclass here inherits methods from):
    its positions are not this file's, so they are all line 0, which the pipeline never reports.
    ``elsewhere`` gives a node's place in its own file, for a related location."""

    def __init__(self, module: cst.Module, path: str = "", first_line: int = 1, indent: int = 0) -> None:
        """``path``: its file ("" when not known); ``first_line``, ``indent``: where the
        (dedented) text of the class starts in it."""
        super().__init__(module, 0, 0, frozenset())
        self.path = path
        self._first_line = first_line
        self._indent = indent

    def span(self, node: cst.CSTNode) -> Span:
        return Span(0, 0, 0, 0)

    def elsewhere(self, node: cst.CSTNode) -> Optional[tuple[str, Span]]:
        """Where ``node`` lies in the class's own file; None when that file is not known."""
        if not self.path:
            return None
        line, column, end_line, end_column = self._tree.positions[node]
        offset = self._first_line - 1
        return self.path, Span(line + offset, column + 1 + self._indent, end_line + offset,
                               end_column + 1 + self._indent)


def parse_class(lines: list[str], node: ast.ClassDef, taken: Optional[set[SnippetTree]] = None) -> ParsedClass:
    """Parse the class ``node`` (from the ast index) out of the file's ``lines`` with libcst.
    ``taken``: the trees the file's other classes use (updated here): a remembered
    tree serves one class of a file only.

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
    # Keyed by the text and its rank among the file's classes of that text (not by its line: a
    # fix that adds lines to one class moves all those below it, which stay as they were).
    # Two classes of one file with the same text (a helper class defined alike in two test
    # functions) keep trees of their own: the model maps nodes to what they mean.
    taken = set() if taken is None else taken
    rank = 0
    tree = _REMEMBERED.get((rank, source))
    while tree is not None and tree in taken:
        rank += 1
        tree = _REMEMBERED.get((rank, source))
    if tree is None:
        tree = SnippetTree(parse_module(source))
        _REMEMBERED.put((rank, source), tree)
    taken.add(tree)
    return ParsedClass(tree.module, first - 1, indent, frozenset(dedented), tree)


class _RememberedTrees:
    """Class trees by (rank, snippet's text) (``parse_class``), the oldest dropped beyond ``limit``
    characters of text; on only inside ``remember_class_trees`` (``limit`` 0: off)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, limit: int = 0) -> None:
        """Forget every tree; keep up to ``limit`` characters of class text from now on (0: off)."""
        self.limit = limit
        self.size = 0
        self.trees: dict[tuple[int, str], SnippetTree] = {}  # oldest first

    def get(self, key: tuple[int, str]) -> Optional[SnippetTree]:
        return self.trees.get(key) if self.limit else None

    def put(self, key: tuple[int, str], tree: SnippetTree) -> None:
        if not self.limit or len(key[1]) > self.limit:
            return
        self.trees[key] = tree
        self.size += len(key[1])
        while self.size > self.limit:
            oldest = next(iter(self.trees))
            self.size -= len(oldest[1])
            del self.trees[oldest]


_REMEMBERED = _RememberedTrees()


@contextmanager
def remember_class_trees(limit: int = 1_000_000) -> Iterator[None]:
    """Keep the libcst tree (and positions) of each class parsed from now on, for any file of
    this process whose class has the very same text (on any lines). For ``--fix``/``--diff``, which lint the
    same text several times (the run's lint, each round's file, the lint after writing it), and
    where most classes come through a round unchanged: each one is then parsed, and its
    positions computed, once. Trees are never changed, so sharing them is safe (as for
    ``class_model._parsed_remote``). ``limit``: characters of class text kept, the oldest
    forgotten first: a tree with its positions takes about 200 bytes of memory per character
    of its text, so at most about 200 MB (a file of 1,000 small classes, fixed: 0.5 MB of text)."""
    _REMEMBERED.reset(limit)
    try:
        yield
    finally:
        _REMEMBERED.reset()  # off again, and the trees let go


def offer_class_trees(lines: list[str], tree: ast.Module, module: cst.Module, names: set[str]) -> None:
    """Remember the module-level classes called ``names`` of ``module``, a fresh libcst parse of
    the text of ``lines`` (whose ``ast`` is ``tree``), as the trees ``parse_class`` would parse for
    them. The --fix driver parses each round's whole text to check it; the lint of that text
    that follows then takes the classes the round changed from that parse instead of parsing
    each again. A class is offered only when its tree, alone, gives back its very text (the
    module's indentation and line endings kept); otherwise ``parse_class`` parses it as usual."""
    if not _REMEMBERED.limit:
        return
    ast_classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    cst_classes = [node for node in module.body if isinstance(node, cst.ClassDef)]
    if len(ast_classes) != len(cst_classes):
        return
    ranks: dict[str, int] = {}
    for node, parsed in zip(ast_classes, cst_classes):
        if node.name != parsed.name.value:
            return
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        source = "".join(lines[first - 1 : node.end_lineno or node.lineno])
        if not source.endswith("\n"):
            source += "\n"
        rank = ranks.get(source, 0)
        ranks[source] = rank + 1
        if node.name not in names or _REMEMBERED.get((rank, source)) is not None:
            continue
        alone = module.with_changes(header=(), body=(parsed.with_changes(leading_lines=()),), footer=())
        if alone.code == source:
            _REMEMBERED.put((rank, source), SnippetTree(alone))


_TOP_LEVEL_DEF = re.compile(r"(?:async )?def (\w+)\(")


def top_level_defs(lines: list[str]) -> dict[str, list[int]]:
    """The index of each line that starts a module-level ``def name(`` (or ``async def``), by
    name: one pass over a file's lines, for all the functions its classes call."""
    found: dict[str, list[int]] = {}
    for i, text in enumerate(lines):
        if text.startswith(("def ", "async def ")):
            match = _TOP_LEVEL_DEF.match(text)
            if match is not None:
                found.setdefault(match.group(1), []).append(i)
    return found


def parse_function(lines: list[str], name: str, starts: Optional[list[int]] = None) -> "ParsedClass | None":
    """The module-level ``def name(...)`` of a file, parsed alone with libcst (its decorators
    included); None when there is none, more than one, or its lines do not parse alone.
    ``starts``: the function's lines as ``top_level_defs`` gives them (else found here).

    The function runs from its ``def`` line to the line before the next statement that starts
    at column 0 (what follows it at module level)."""
    if starts is None:
        starts = top_level_defs(lines).get(name, [])
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
    # Remembered as classes are (``remember_class_trees``), under a rank no class takes: a
    # file has one function of a name, so its tree serves that function only.
    tree = _REMEMBERED.get((_FUNCTION_RANK, source))
    if tree is None:
        try:
            tree = SnippetTree(parse_module(source))
        except (cst.ParserSyntaxError, StopIteration):
            return None
        _REMEMBERED.put((_FUNCTION_RANK, source), tree)
    try:
        return ParsedClass(tree.module, first, 0, frozenset(), tree)
    except StopIteration:  # no def in what was read
        return None


_FUNCTION_RANK = -1  # parse_function's key in _REMEMBERED (a class's rank is 0 or more)
