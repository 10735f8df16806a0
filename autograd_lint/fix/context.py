"""One file as the fixers see it: a whole-file libcst tree, node positions, and the static model.

Findings carry positions; rules compute them on per-class snippets (character columns) or on
the ``ast`` index (UTF-8 byte columns, for AGL104 and AGL501). ``node_at`` finds the node of the
whole-file tree that starts there, so a fixer can rewrite it and keep every comment and space.
"""

from __future__ import annotations

import ast
import warnings
from functools import cached_property
from typing import Optional, TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.module import ModuleAnalysis, analyse_module
from autograd_lint.analysis.project import ProjectFacts
from autograd_lint.analysis.syntax import source_lines
from autograd_lint.findings import Finding

NodeT = TypeVar("NodeT", bound=cst.CSTNode)


class FixContext:
    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.module = cst.parse_module(text)
        # unsafe_skip_copy: positions must be keyed by the very nodes the fixers replace.
        self._wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self.positions = self._wrapper.resolve(PositionProvider)
        self.lines = source_lines(text)
        self._starts: Optional[dict[tuple[int, int], list[cst.CSTNode]]] = None

    # --- positions ------------------------------------------------------------------------
    def start(self, node: cst.CSTNode) -> tuple[int, int]:
        """(line, 1-based character column) where ``node`` starts."""
        position = self.positions[node].start
        return position.line, position.column + 1

    def span(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        code_range = self.positions[node]
        return code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column

    def node_at(self, kind: type[NodeT], line: int, column: int, byte_column: bool = False) -> Optional[NodeT]:
        """The outermost node of type ``kind`` starting at (line, 1-based column)."""
        candidates = self.nodes_at(kind, line, column, byte_column)
        return candidates[0] if candidates else None

    def nodes_at(self, kind: type[NodeT], line: int, column: int, byte_column: bool = False) -> list[NodeT]:
        """Every node of type ``kind`` starting at (line, 1-based column), outermost first."""
        if self._starts is None:
            self._starts = {}
            for node in self.positions:
                self._starts.setdefault(self.start(node), []).append(node)
        if byte_column:
            column = self._char_column(line, column)
        candidates = [n for n in self._starts.get((line, column), []) if isinstance(n, kind)]
        return sorted(candidates, key=lambda n: self.span(n)[2:], reverse=True)

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
    def parents(self):
        # A second walk of the whole module: only the fixers that ask for a parent pay for it.
        return self._wrapper.resolve(ParentNodeProvider)

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.parents.get(node)

    # --- the static model --------------------------------------------------------------------
    @cached_property
    def analysis(self) -> Optional[ModuleAnalysis]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                tree = ast.parse(self.text, filename=self.path)
            except SyntaxError:
                return None
        # The file alone: facts from other files only ever add findings, never fixes.
        return analyse_module(self.path, self.text, tree, ProjectFacts())

    def model(self, finding: Finding) -> Optional[FunctionModel]:
        """The Function class the finding is in (by name, and by the lines it spans)."""
        if self.analysis is None or finding.function_class is None:
            return None
        for model in self.analysis.classes:
            node = model.info.node
            if model.name == finding.function_class and node.lineno <= finding.line <= (node.end_lineno or 0):
                return model
        return None

    def method_node(self, method: Method) -> Optional[cst.FunctionDef]:
        """The whole-file ``def`` of ``method`` (found by its name node)."""
        name = self.same_node(method, method.node.name)
        parent = self.parent(name) if name is not None else None
        return parent if isinstance(parent, cst.FunctionDef) else None
