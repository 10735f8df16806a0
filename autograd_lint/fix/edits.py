"""A fix as data (which nodes become what), and applying several fixes to one tree.

Fixes of one round must not touch overlapping code: the first one wins, the others wait for
the next round (the driver lints again and asks for fresh fixes). Two findings that need the
very same edit (two in-place writes on one gradient need one ``g = g.clone()``) share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, TypeVar, Union

import libcst as cst

from autograd_lint.analysis.syntax import children

# What a node becomes: one node, several statements (a FlattenSentinel), or nothing (removed).
Replacement = Union[cst.CSTNode, cst.FlattenSentinel, cst.RemovalSentinel]
NodeT = TypeVar("NodeT", bound=cst.CSTNode)


@dataclass
class Fix:
    code: str
    safe: bool
    edits: dict[cst.CSTNode, Replacement] = field(default_factory=dict)


def render(replacement: Replacement) -> str:
    if isinstance(replacement, cst.RemovalSentinel):
        return ""
    if isinstance(replacement, cst.FlattenSentinel):
        return "\n".join(render(node) for node in replacement.nodes)
    return cst.Module([]).code_for_node(replacement)


@dataclass
class Round:
    """The fixes accepted for one pass over a tree, and the spans they claim."""

    spans: list[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=list)
    edits: dict[cst.CSTNode, Replacement] = field(default_factory=dict)

    # The accepted spans by their first line, and the most lines one spans: an overlap check
    # looks at the spans that can reach the new one's lines, not at all of them (a file of
    # 1,000 fixed classes made that quadratic).
    _by_line: dict[int, list[tuple[tuple[int, int], tuple[int, int]]]] = field(default_factory=dict)
    _tallest: int = 0

    def accept(self, fix: Fix, span_of) -> bool:
        """Take ``fix`` unless it overlaps an accepted one; True if its edits will be made."""
        if fix.edits and all(node in self.edits and render(self.edits[node]) == render(new)
                             for node, new in fix.edits.items()):
            return True  # the same edit as an accepted fix: done by that one
        spans = [span_of(node) for node in fix.edits]
        for start, end in spans:
            for other_start, other_end in self._reaching(start[0], end[0]):
                if start < other_end and other_start < end or start == other_start:
                    return False
        self.spans.extend(spans)
        for start, end in spans:
            self._by_line.setdefault(start[0], []).append((start, end))
            self._tallest = max(self._tallest, end[0] - start[0])
        self.edits.update(fix.edits)
        return True

    def _reaching(self, first: int, last: int):
        """The accepted spans that start between ``first - _tallest`` and ``last``: every one that
        can overlap lines ``first``..``last``."""
        for line in range(first - self._tallest, last + 1):
            yield from self._by_line.get(line, ())

    def apply(self, module: cst.Module, code_parents: Optional[dict[cst.CSTNode, cst.CSTNode]] = None,
              positions: Optional[dict[cst.CSTNode, tuple[int, int, int, int]]] = None) -> cst.Module:
        """``module`` with the accepted edits made. ``code_parents``: each code node's parent in
        ``module`` (``FixContext.parents``, which the fixers have mostly built already), and
        ``positions``, each node's span (``FixContext.positions``): an edited token or
        whitespace node (a comment), which ``code_parents`` leaves out, is then found by its
        span. Without them the whole tree is walked."""
        holders = None
        if code_parents is not None and positions is not None:
            holders = _ancestors(module, self.edits, code_parents, positions)
        if holders is None:
            holders = _ancestors(module, self.edits, _parents(module), None)
        return module.visit(_Replace(self.edits, holders))


def _parents(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode]:
    """Each node's parent, tokens and whitespace included (an edit may replace a comment)."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        for child in children(node):
            parents[child] = node
            stack.append(child)
    return parents


def _ancestors(module: cst.Module, edits: dict[cst.CSTNode, Replacement], parents: dict[cst.CSTNode, cst.CSTNode],
               positions: Optional[dict[cst.CSTNode, tuple[int, int, int, int]]]) -> Optional[set[cst.CSTNode]]:
    """Every node that holds an edited node, or None when an edited node is not in ``module``.
    libcst's transformer rebuilds every node it descends into: descending only into these
    (a walk of the tree's fields is six times cheaper) gives the same tree. ``parents`` may
    leave nodes out when ``positions`` is given: those are looked for by their span."""
    holders: set[cst.CSTNode] = set()
    for node in edits:
        if node is not module and node not in parents:
            path = _path_by_span(module, node, positions) if positions is not None else None
            if path is None:
                return None
            holders.update(path)
            continue
        while node in parents:
            node = parents[node]
            if node in holders:
                break  # and so are the nodes above it
            holders.add(node)
    return holders


def _path_by_span(module: cst.Module, target: cst.CSTNode,
                  positions: dict[cst.CSTNode, tuple[int, int, int, int]]) -> Optional[list[cst.CSTNode]]:
    """The nodes from ``module`` down to ``target``'s parent, descending only into the children
    whose span holds ``target``'s (None when it is not found so). A node's span can leave out
    some of its tokens (an indented block's starts on its first statement's line, not with the
    comment after the ``:`` before it): then the smallest node found whose span holds
    ``target``'s (a class) is searched whole, rather than the whole module."""
    span = positions.get(target)
    if span is None:
        return None
    start, end = span[:2], span[2:]
    stack: list[tuple[cst.CSTNode, list[cst.CSTNode]]] = [(module, [module])]
    holding: list[list[cst.CSTNode]] = []  # the paths to the nodes found holding it, in search order
    while stack:
        node, path = stack.pop()
        holding.append(path)
        for child in children(node):
            if child is target:
                return path
            where = positions.get(child)
            if where is not None and where[:2] <= start and end <= where[2:]:
                stack.append((child, path + [child]))
    for path in reversed(holding[1:]):  # not the module: that is the caller's whole walk
        found = _path_within(path[-1], target)
        if found is not None:
            return path + found
    return None


def _path_within(node: cst.CSTNode, target: cst.CSTNode) -> Optional[list[cst.CSTNode]]:
    """The nodes strictly below ``node`` down to ``target``'s parent ([] when ``target`` is a
    child of ``node``; None when it is not below it)."""
    stack: list[tuple[cst.CSTNode, list[cst.CSTNode]]] = [(node, [])]
    while stack:
        current, path = stack.pop()
        for child in children(current):
            if child is target:
                return path
            stack.append((child, path + [child]))
    return None


class _Replace(cst.CSTTransformer):
    def __init__(self, edits: dict[cst.CSTNode, Replacement], within: Optional[set[cst.CSTNode]] = None) -> None:
        """``within``: descend only into these nodes (None: into all)."""
        super().__init__()
        self.edits = edits
        self.within = within
        self.used: set[cst.CSTNode] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self.within is None or node in self.within

    def on_leave(self, original_node, updated_node):
        if original_node in self.edits:
            self.used.add(original_node)
            return self.edits[original_node]
        return updated_node


def with_edits_inside(node: NodeT, edits: dict[cst.CSTNode, Replacement]) -> tuple[NodeT, set[cst.CSTNode]]:
    """``node`` with those of ``edits`` that lie inside it made, and which ones those were.

    A fix that replaces a node and also nodes inside it (a line inserted before a statement that
    holds another edit) must make the inner edits itself: the driver replaces the outer node by
    the replacement as given, so edits below it would be lost."""
    transformer = _Replace(edits)
    return node.visit(transformer), transformer.used


# --- small builders the fixers share ----------------------------------------------------------

def parse_statement(code: str, module: cst.Module) -> cst.BaseStatement:
    """One statement in the module's own newline and indentation style."""
    return cst.parse_statement(code, config=module.config_for_parsing)


def insert_before(statement: cst.BaseStatement, new: list[cst.BaseStatement]) -> cst.FlattenSentinel:
    """``new`` statements, then ``statement``; comments and blank lines above it stay above all."""
    if not new:
        return cst.FlattenSentinel([statement])
    first = new[0].with_changes(leading_lines=statement.leading_lines)
    return cst.FlattenSentinel([first, *new[1:], statement.with_changes(leading_lines=())])


def insert_after(statement: cst.BaseStatement, new: list[cst.BaseStatement]) -> cst.FlattenSentinel:
    return cst.FlattenSentinel([statement, *new])


def first_statement(body: cst.IndentedBlock) -> cst.BaseStatement:
    """The first statement after a docstring (or the docstring when it is all there is)."""
    statements = list(body.body)
    first = statements[0]
    if len(statements) > 1 and isinstance(first, cst.SimpleStatementLine) and isinstance(
            first.body[0], cst.Expr) and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        return statements[1]
    return first


def comment_lines(line: cst.SimpleStatementLine) -> list[cst.EmptyLine]:
    """What a removed line leaves behind: the blank and comment lines above it, and its own
    end-of-line comment as a comment line of its own."""
    kept = list(line.leading_lines)
    comment = line.trailing_whitespace.comment
    if comment is not None:
        kept.append(cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=comment))
    return kept


def without_element(elements, index: int):
    """``elements`` (Args or Elements) without the one at ``index``, commas kept tidy."""
    result = list(elements)
    removed = result.pop(index)
    if index == len(result) and result:  # removed the last: its (absent) comma moves back
        result[-1] = result[-1].with_changes(comma=removed.comma)
    return result


def comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def append_items(items, new: list):
    """``items`` (call Args or tuple Elements) followed by ``new``, in the layout already there:
    the separator between the last two items is reused (one per line stays one per line), and
    a trailing comma stays trailing (except the one that only made ``(g,)`` a tuple)."""
    items = list(items)
    if not items:
        return [n.with_changes(comma=comma()) for n in new[:-1]] + new[-1:]
    last = items[-1]
    trailing = last.comma
    separator = items[-2].comma if len(items) >= 2 and isinstance(items[-2].comma, cst.Comma) else comma()
    if len(items) == 1 and isinstance(trailing, cst.Comma) and not isinstance(
            trailing.whitespace_after, cst.ParenthesizedWhitespace):
        trailing = cst.MaybeSentinel.DEFAULT  # `(g,)` -> `(g, None)`
    moved = {}
    if isinstance(last, cst.Arg):  # the space before `)` belongs to the last argument
        moved = {"whitespace_after_arg": last.whitespace_after_arg}
        last = last.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
    if _multiline(trailing) and _multiline(separator):
        # One item per line: the last item keeps its comma (and its comment), re-indented like
        # the others; the new last item ends the way the old one did, without the comment.
        last_comma = trailing.with_changes(whitespace_after=trailing.whitespace_after.with_changes(
            last_line=separator.whitespace_after.last_line))
        bare_end = trailing.whitespace_after.first_line.with_changes(
            whitespace=cst.SimpleWhitespace(""), comment=None)
        final = trailing.with_changes(whitespace_after=trailing.whitespace_after.with_changes(
            first_line=bare_end, empty_lines=[]))
        items[-1] = last.with_changes(comma=last_comma)
        added = [n.with_changes(comma=separator) for n in new[:-1]] + [new[-1].with_changes(comma=final, **moved)]
        return [*items, *added]
    items[-1] = last.with_changes(comma=separator)
    added = [n.with_changes(comma=separator) for n in new[:-1]] + [new[-1].with_changes(comma=trailing, **moved)]
    return [*items, *added]


def _multiline(separator) -> bool:
    return isinstance(separator, cst.Comma) and isinstance(separator.whitespace_after, cst.ParenthesizedWhitespace)
