"""One file as the fixers see it: a whole-file libcst tree, node positions, and the static model.

Findings carry positions; rules compute them on per-class snippets (character columns) or on
the ``ast`` index (UTF-8 byte columns, for AGL104 and AGL501). ``node_at`` finds the node of the
whole-file tree that starts there, so a fixer can rewrite it and keep every comment and space.

Deciding ``fix_available`` for every lint run must stay cheap: there the libcst tree may hold
only the Function classes the findings are in (``focus``). Every other line is blanked, so each
kept node has the very line and column it has in the file; the model (``analysis``) and the text
are still the whole file's. A whole-module libcst parse and position pass over a large test
file costs seconds; its one or two Function classes, milliseconds.
"""

from __future__ import annotations

import ast
import re
from functools import cached_property
from typing import Optional, TypeVar

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.positions import Position, node_positions
from autograd_lint.analysis.project import ProjectFacts
from autograd_lint.analysis.source_file import SourceFile
from autograd_lint.analysis.syntax import code_children
from autograd_lint.analysis.whole_module import AssembledModule, assemble
from autograd_lint.catalogue import RULES
from autograd_lint.findings import Finding
from autograd_lint.source import source_lines

NodeT = TypeVar("NodeT", bound=cst.CSTNode)


_LONE_BACKSLASH = re.compile(r"^[ \t\f]*\\\r?$", re.M)

# Fixers that look at code outside the Function class of the finding (call sites, gradcheck
# inputs in tests): their findings always get the whole module.
WHOLE_MODULE_CODES = frozenset(code for code, info in RULES.items() if info.fix_reads_whole_module)


class FixContext:
    def __init__(self, source: SourceFile, focus: Optional[list[tuple[int, int]]] = None,
                 whole: Optional["FixContext"] = None, module: Optional[cst.Module] = None,
                 from_class_trees: bool = False, assembled: Optional[AssembledModule] = None) -> None:
        """``focus``: (first line, last line) ranges, each a whole class statement; the libcst
        tree then holds only those lines (see the module docstring). libcst parses on first
        use of ``module``, which raises ``cst.ParserSyntaxError`` if it cannot. ``whole``: the
        file's unfocused context, whose model a focused one shares (``focused``). ``module``:
        the whole file's libcst tree, when the caller has parsed the text already.
        ``from_class_trees``: build the whole module (and its positions) from the libcst trees
        of the file's classes that ``source``'s lint parsed (``analysis.whole_module``) where
        that gives the tree a parse would, rather than take ``module`` or parse the text;
        ``assembled``: such a module, built already (``whole_module``)."""
        self._given_module = module if focus is None else None
        self._from_class_trees = from_class_trees and focus is None
        self._assembled = assembled if focus is None else None  # the module, when built from class trees
        if self._assembled is not None:
            self.__dict__["module"] = self._assembled.module  # what the cached property would make
        self.source = source
        self.focus = focus
        self._whole = whole  # None for the whole context itself (no reference cycle to itself)
        self._starts: Optional[dict[tuple[int, int], list[cst.CSTNode]]] = None  # nodes by where they start
        self._on_line: dict[int, list[cst.CSTNode]] = {}  # nodes by the line they start on
        self._line_offset = 0  # lines of the file before the first line the libcst tree holds
        self.module_error: Optional[BaseException] = None  # why ``module`` could not be parsed

    @property
    def path(self) -> str:
        return self.source.path

    @property
    def text(self) -> str:
        return self.source.text

    @property
    def lines(self) -> list[str]:
        return self.source.lines

    @cached_property
    def module(self) -> cst.Module:
        if self._from_class_trees:
            self._assembled = whole_module(self.source)
            if self._assembled is not None:
                return self._assembled.module
        if self._given_module is not None:
            return self._given_module
        try:
            if self.focus is None:
                return cst.parse_module(self.text)
            source, self._line_offset = focused_source(self.text, self.focus)
            return cst.parse_module(source)
        except Exception as error:
            # Kept so that ``fix_for`` can tell this failure (no fixer can work on the file)
            # from a fixer's own: the --fix driver parses the module only when a fixer asks.
            self.module_error = error
            raise

    @cached_property
    def positions(self) -> dict[cst.CSTNode, Position]:
        """Each node of ``module`` and its (line, column, end line, end column) in the libcst
        tree (0-based columns; lines before the tree's first are not counted: ``start``)."""
        module = self.module  # parsed or assembled first
        if self._assembled is not None:
            return self._assembled.positions()
        return node_positions(module)

    def code_of(self, edited: cst.Module) -> str:
        """The code of ``edited``, ``module`` with a round's edits made: only the classes that
        changed are generated again when ``module`` was built from class trees."""
        if self._assembled is not None and self.__dict__.get("module") is self._assembled.module:
            return self._assembled.code_of(edited)
        return edited.code

    def focused(self, findings: list[Finding]) -> "FixContext":
        """A context whose libcst tree holds only the classes of ``findings`` (self when one of
        them needs more); the file and its model are shared, not computed again."""
        ranges = focus_of(self, findings)
        if ranges is None:
            return self
        return FixContext(self.source, ranges, whole=self)

    # --- positions ------------------------------------------------------------------------
    def start(self, node: cst.CSTNode) -> tuple[int, int]:
        """(line, 1-based character column) where ``node`` starts."""
        line, column, _, _ = self.positions[node]
        return line + self._line_offset, column + 1

    def span(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        line, column, end_line, end_column = self.positions[node]
        offset = self._line_offset
        return line + offset, column, end_line + offset, end_column

    def node_at(self, kind: type[NodeT], line: int, column: int, byte_column: bool = False) -> Optional[NodeT]:
        """The outermost node of type ``kind`` starting at (line, 1-based column)."""
        candidates = self.nodes_at(kind, line, column, byte_column)
        return candidates[0] if candidates else None

    def nodes_at(self, kind: type[NodeT], line: int, column: int, byte_column: bool = False) -> list[NodeT]:
        """Every node of type ``kind`` starting at (line, 1-based column), outermost first."""
        if byte_column:
            column = self._char_column(line, column)
        candidates = [n for n in self._index_of_starts().get((line, column), []) if isinstance(n, kind)]
        return sorted(candidates, key=lambda n: self.span(n)[2:], reverse=True)

    def nodes_on_line(self, line: int) -> list[cst.CSTNode]:
        """Every node that starts on ``line``, in the tree's order (outer before inner)."""
        self._index_of_starts()
        return self._on_line.get(line, [])

    def _index_of_starts(self) -> dict[tuple[int, int], list[cst.CSTNode]]:
        # One pass over the positions for all the lookups of a context: a fixer that scanned
        # them for each finding made a file of many suppression comments cost quadratic time.
        if self._starts is None:
            starts: dict[tuple[int, int], list[cst.CSTNode]] = {}
            on_line: dict[int, list[cst.CSTNode]] = {}
            positions = self.positions  # parses the module first, which sets ``_line_offset``
            offset = self._line_offset
            for node, (line, column, _, _) in positions.items():  # ``start``, inlined
                line += offset
                starts.setdefault((line, column + 1), []).append(node)
                on_line.setdefault(line, []).append(node)
            self._starts, self._on_line = starts, on_line
        return self._starts

    def _char_column(self, line: int, byte_column: int) -> int:
        if not 1 <= line <= len(self.lines):
            return byte_column
        encoded = self.lines[line - 1].encode("utf-8")
        return len(encoded[: byte_column - 1].decode("utf-8", errors="ignore")) + 1

    def same_node(self, method: Method, node: NodeT) -> Optional[NodeT]:
        """The whole-file node for ``node`` of the per-class snippet ``method`` was parsed from."""
        span = method.span(node)
        candidates = self.nodes_at(type(node), span.line, span.column)
        # `ctx.w` and `ctx.w.t` start at the same place: the one that also ends where it ends.
        exact = [c for c in candidates if self.span(c)[2:] == (span.end_line, span.end_column - 1)]
        return exact[0] if exact else (candidates[0] if candidates else None)

    @cached_property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        """Each code node's parent (tokens and whitespace, which no fixer asks about, left out).
        Read from the nodes' fields: libcst's ParentNodeProvider visits and rebuilds every node
        of the module, two thirds of the fix-availability pass on a file of many classes. Only
        the fixers that ask for a parent pay for this walk."""
        parents: dict[cst.CSTNode, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = [self.module]
        while stack:
            node = stack.pop()
            for child in code_children(node):
                parents[child] = node
                stack.append(child)
        return parents

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.parents.get(node)

    # --- the static model --------------------------------------------------------------------
    @property
    def tree(self) -> Optional[ast.Module]:
        """The whole file's ``ast`` (None if Python cannot parse it)."""
        return self.source.tree

    @property
    def subclassed_names(self) -> Optional[frozenset[str]]:
        """The last name of every base class in the file (``SourceFile.subclassed_names``)."""
        return self.source.subclassed_names

    @property
    def analysis(self) -> Optional[ModuleAnalysis]:
        """The file's model, on its own: facts from other files only ever add findings, never
        fixes (None if Python cannot parse the file)."""
        return (self._whole or self)._analysis_alone

    @cached_property
    def _analysis_alone(self) -> Optional[ModuleAnalysis]:
        project = ProjectFacts()
        return self.source.analysis(project) if self.source.analysable(project) else None

    @cached_property
    def _models_by_name(self) -> dict[str, list[FunctionModel]]:
        # Asked for every finding: a scan of all the classes each time made a file of many
        # classes cost quadratic time.
        by_name: dict[str, list[FunctionModel]] = {}
        for model in self.analysis.classes if self.analysis is not None else ():
            by_name.setdefault(model.name, []).append(model)
        return by_name

    def model(self, finding: Finding) -> Optional[FunctionModel]:
        """The Function class the finding is in (by name, and by the lines it spans)."""
        if self.analysis is None or finding.function_class is None:
            return None
        for model in self._models_by_name.get(finding.function_class, ()):
            node = model.info.node
            if model.name == finding.function_class and node.lineno <= finding.line <= (node.end_lineno or 0):
                return model
        return None

    def method_node(self, method: Method) -> Optional[cst.FunctionDef]:
        """The whole-file ``def`` of ``method`` (found by its name node)."""
        name = self.same_node(method, method.node.name)
        parent = self.parent(name) if name is not None else None
        return parent if isinstance(parent, cst.FunctionDef) else None


def whole_module(source: SourceFile) -> Optional[AssembledModule]:
    """The file's whole libcst module from the trees of its classes (``source.parsed_class``:
    the ones its lint parsed, or parses); None where that cannot stand for a parse of the text
    (then the caller parses it, which reports what libcst cannot read)."""
    if source.tree is None:
        return None
    try:
        return assemble(source.lines, source.tree, source.parsed_class)
    except (cst.ParserSyntaxError, RecursionError):
        return None


def focus_of(context: FixContext, findings: list[Finding]) -> Optional[list[tuple[int, int]]]:
    """The line ranges of the Function classes ``findings`` are in, or None when one of them
    needs the whole module (its fixer looks outside the class, or its class is not known)."""
    if context.analysis is None or context.analysis.unparsed or _LONE_BACKSLASH.search(context.text):
        # libcst's grammar rejects something in the file (a class, or a line holding only a
        # backslash, which may sit outside any class): then --fix cannot parse the whole module,
        # and a focused parse must not promise a fix it cannot make.
        return None
    ranges = set()
    for finding in findings:
        model = context.model(finding) if finding.code not in WHOLE_MODULE_CODES else None
        if model is None:
            return None
        node = model.info.node
        ranges.add((min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno or node.lineno))
    return sorted(ranges)


def focused_source(text: str, ranges: list[tuple[int, int]]) -> tuple[str, int]:
    """``only_lines``, from the first kept line (or the ``if 1:`` before it) to the last: the
    source libcst parses for a focused context, and how many lines of the file come before it.
    The blank lines before and after would each become a libcst node (a 2,400-line test file
    with two small Function classes: 0.2 s of parsing and positions, for nothing)."""
    lines = source_lines(only_lines(text, ranges))
    first = min(start for start, _ in ranges) - 1  # 0-based
    if first >= 1 and lines[first - 1].startswith("if 1:"):
        first -= 1
    last = max(end for _, end in ranges)
    return "".join(lines[first:last]), first


def only_lines(text: str, ranges: list[tuple[int, int]]) -> str:
    """``text`` with every line outside ``ranges`` blanked (its line ending kept), so that what
    is kept parses with its own line and column numbers. A range that starts indented (a class
    nested in a function) gets ``if 1:`` on the line before it to open a block at its
    indentation."""
    lines = source_lines(text)
    kept = [False] * len(lines)
    for first, last in ranges:
        for number in range(first, min(last, len(lines)) + 1):
            kept[number - 1] = True
    result = [line if keep else line[len(line.rstrip("\r\n")):] for line, keep in zip(lines, kept)]
    for first, _ in ranges:
        if lines[first - 1][:1] in (" ", "\t") and first >= 2 and not kept[first - 2]:
            result[first - 2] = "if 1:" + result[first - 2]
    return "".join(result)
