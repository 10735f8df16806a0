"""A file's whole-module libcst tree and node positions, put together from the libcst trees of
its module-level classes (``snippet.parse_class``) instead of parsing and placing the whole text.

The ``--fix`` driver needs the whole module each round (the fixers find nodes by position and
the edits are made on it). On a file of 1,000 Function classes a whole-module parse costs about
2 s and its positions 1 s, while the round's lint has just parsed every class and placed the
nodes of those with findings: ``assemble`` reuses them. What lies between the classes (imports,
functions, comments) is parsed as a skeleton in which each class is a one-line placeholder
``class ...: pass``, and each placeholder is then swapped for its class's tree (given the
placeholder's leading lines: the comments and blank lines above the class).

The result must be the tree ``cst.parse_module`` gives (``deep_equals``) and the positions those
``node_positions`` gives, in the same order (tests/test_whole_module.py checks both on every
fixture; bench/NOTES.md says how the installed torch's files fared). Where the two could
differ, ``assemble`` gives None and the caller parses the whole text as before:
- lines after a class that libcst could give to the class's block (its ``footer``: anything
  indented, or a line of only spaces) rather than to the next statement;
- pieces that would not agree on the module's indentation or line ending (libcst takes both
  from the first indented block and the first line end of the whole text);
- a text without a final line end, a line of only a backslash, or nothing to gain (no class).
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Optional

import libcst as cst

from autograd_lint.analysis.positions import Position, node_positions, recording_state
from autograd_lint.analysis.snippet import ParsedClass, SnippetTree, parse_class

_PLACEHOLDER = "_autograd_lint_class_placeholder_"

# After a class's last line, up to the next statement: lines libcst gives to that statement for
# sure (a line end alone, or a comment at column 0). Anything else may be the class block's footer.
_BETWEEN_LINE = re.compile(r"(?:\r\n|\r|\n|#.*)\Z", re.S)
_LONE_BACKSLASH = re.compile(r"^[ \t\f]*\\\r?$", re.M)


class AssembledModule:
    """The whole-module tree, and for each class put in it the tree it came from and its text
    (what ``positions`` places without generating the class's code again)."""

    def __init__(self, module: cst.Module, pieces: dict[cst.ClassDef, tuple[SnippetTree, cst.ClassDef, str]],
                 lines: list[str], spans: dict[cst.ClassDef, tuple[int, int]]) -> None:
        self.module = module
        self._pieces = pieces  # class node in ``module`` -> (its tree, the tree's class node, its text)
        self._lines = lines  # the text's
        self._spans = spans  # class node in ``module`` -> its first and last line (1-based)

    def code_of(self, edited: cst.Module) -> str:
        """``edited.code`` for ``edited``, this module with some of its classes rebuilt (as
        ``fix.edits.Round.apply`` makes it: the statements it did not change are the very
        nodes of this module). Only the classes that changed are generated again; the other
        lines are this text's. Everything else (a statement added, removed or changed outside
        the classes, a class's leading lines) makes the whole code generated."""
        module = self.module
        if (len(edited.body) != len(module.body) or not _same_nodes(edited.header, module.header)
                or not _same_nodes(edited.footer, module.footer) or edited.default_indent != module.default_indent
                or edited.default_newline != module.default_newline or not edited.has_trailing_newline):
            return edited.code
        lines = self._lines
        parts: list[str] = []
        done = 0  # lines of this text already in ``parts``
        for old, new in zip(module.body, edited.body):
            if new is old:
                continue
            span = self._spans.get(old)
            if span is None or not isinstance(new, cst.ClassDef) or not _same_nodes(new.leading_lines, old.leading_lines):
                return edited.code
            first, last = span
            parts.extend(lines[done:first - 1])
            parts.append(edited.code_for_node(new.with_changes(leading_lines=())))
            done = last
        parts.extend(lines[done:])
        return "".join(parts)

    def positions(self) -> dict[cst.CSTNode, Position]:
        """``node_positions(self.module)``, with each class's positions taken from its own tree
        (moved down to its line) rather than computed again. The dict's order is the one
        ``node_positions`` gives too (``FixContext.nodes_on_line`` reads nodes in that order)."""
        module = self.module
        state = recording_state(module)
        if state is None:
            return node_positions(module)
        positions = state.provider
        state.before_codegen(module)
        for line in module.header:
            line._codegen(state)
        for statement in module.body:
            piece = self._pieces.get(statement)
            if piece is None:
                statement._codegen(state)
                continue
            tree, tree_class, text = piece
            state.before_codegen(statement)
            for line in statement.leading_lines:
                line._codegen(state)
            offset = state.line - 1  # a module-level class starts at column 0
            for node, (line, column, end_line, end_column) in tree.positions.items():
                if node is tree_class:
                    node = statement
                elif node is tree.module:
                    continue
                positions[node] = (line + offset, column, end_line + offset, end_column)
            state.add_token(text)
            state.after_codegen(statement)  # its position is its tree's class's, set above
        for line in module.footer:
            line._codegen(state)
        state.after_codegen(module)
        return positions


def assemble(lines: list[str], tree: ast.Module,
             class_tree: Optional[Callable[[ast.ClassDef], ParsedClass]] = None) -> Optional[AssembledModule]:
    """The whole module of the text of ``lines`` (whose ``ast`` is ``tree``), built from its
    module-level classes' trees, or None when that could differ from a whole-module parse (see
    the module docstring). ``class_tree``: a class's tree (``SourceFile.parsed_class``: the ones
    the file's lint used); by default ``parse_class`` (remembered trees when
    ``remember_class_trees`` is on, else parsed here). Raises ``cst.ParserSyntaxError`` when
    libcst cannot parse a piece."""
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    if not classes or not lines or not lines[-1].endswith(("\n", "\r")):
        return None
    skeleton: list[str] = []
    spans = []
    done = 0  # lines of the file copied into the skeleton so far
    for number, node in enumerate(classes):
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        last = node.end_lineno or node.lineno
        if node.col_offset or first <= done or not _only_next_statement_lines(lines, last):
            return None
        skeleton.extend(lines[done:first - 1])
        skeleton.append(f"class {_PLACEHOLDER}{number}: pass{_line_end(lines[last - 1])}")
        spans.append((first, last))
        done = last
    skeleton.extend(lines[done:])
    skeleton_text = "".join(skeleton)
    if _LONE_BACKSLASH.search("".join(lines)):  # libcst's grammar lags CPython's there
        return None
    try:
        skeleton_module = cst.parse_module(skeleton_text)
    except cst.ParserSyntaxError:
        return None  # the whole parse will say so
    if not skeleton_module.has_trailing_newline:
        return None
    if class_tree is None:
        taken: set[SnippetTree] = set()
        class_tree = lambda node: parse_class(lines, node, taken)  # noqa: E731
    trees = []
    for node, (first, last) in zip(classes, spans):
        parsed = class_tree(node)
        trees.append((parsed.tree, parsed.node, "".join(lines[first - 1:last])))
    if not _same_settings(skeleton_module, [tree.module for tree, _, _ in trees]):
        return None
    pieces: dict[cst.ClassDef, tuple[SnippetTree, cst.ClassDef, str]] = {}
    class_spans: dict[cst.ClassDef, tuple[int, int]] = {}
    body = []
    placeholders = iter(zip(trees, spans))
    for statement in skeleton_module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value.startswith(_PLACEHOLDER):
            piece, span = next(placeholders, (None, None))
            if piece is None or statement.name.value != f"{_PLACEHOLDER}{len(pieces)}":
                return None
            statement = piece[1].with_changes(leading_lines=statement.leading_lines)
            pieces[statement] = piece
            class_spans[statement] = span
        body.append(statement)
    if len(pieces) != len(trees):
        return None
    return AssembledModule(skeleton_module.with_changes(body=body), pieces, lines, class_spans)


def _same_nodes(these, those) -> bool:
    return len(these) == len(those) and all(a is b for a, b in zip(these, those))


def _only_next_statement_lines(lines: list[str], last: int) -> bool:
    """Whether the lines after line ``last`` (1-based), up to the next statement, all belong to
    that statement in libcst (line ends alone, comments at column 0)."""
    for text in lines[last:]:
        if text[:1] not in (" ", "\t", "\f", "\n", "\r", "#"):
            return True  # the next statement (or its decorator) at column 0
        if not _BETWEEN_LINE.match(text):
            return False
    return True


def _line_end(text: str) -> str:
    return text[len(text.rstrip("\r\n")):] or "\n"


def _same_settings(skeleton: cst.Module, classes: list[cst.Module]) -> bool:
    """Whether every piece has the indentation and line ending the skeleton has: then the whole
    text's (taken from its first indented block and its first line end, which lie in one of the
    pieces) is that one too, and each piece's code is the same in the whole module."""
    return all(module.default_indent == skeleton.default_indent and module.default_newline == skeleton.default_newline
               for module in classes)
