"""Small helpers over libcst nodes that every part of the analysis uses."""

from __future__ import annotations

import re
from typing import Iterator, Optional

import libcst as cst


def dotted(node: Optional[cst.CSTNode]) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def last_name(node: Optional[cst.CSTNode]) -> Optional[str]:
    """The final component of a dotted name or call: ``torch.nn.functional.relu`` -> ``relu``."""
    if isinstance(node, cst.Call):
        node = node.func
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return None


def is_none(node: Optional[cst.CSTNode]) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def is_ctx_attr(node: cst.CSTNode, ctx_names: frozenset[str], attr: Optional[str] = None) -> bool:
    """``ctx.<attr>`` (any attribute when ``attr`` is None) on one of the ctx names."""
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value in ctx_names
        and (attr is None or node.attr.value == attr)
    )


def call_keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None]


def has_star_arg(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


class _OwnNodes(cst.CSTVisitor):
    """Collects every node of a function body, but not those of nested functions, lambdas or
    classes: a ``return`` in a helper defined inside backward is not backward's return."""

    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef))


def own_nodes(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """Every node in ``function``'s body in source order, nested scopes excluded."""
    collector = _OwnNodes()
    function.body.visit(collector)
    return collector.nodes


def all_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` (nested scopes included), in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def names_read(node: cst.CSTNode) -> set[str]:
    """Names read anywhere under ``node``, nested scopes included (an over-approximation that
    only skips attribute names and keyword-argument names)."""
    result: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Attribute):
            stack.append(current.value)
            continue
        if isinstance(current, cst.Arg) and current.keyword is not None:
            stack.append(current.value)
            continue
        if isinstance(current, cst.Name):
            result.add(current.value)
        stack.extend(current.children)
    return result




_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str) -> list[str]:
    """The lines of a module as Python numbers them (ends kept). Not ``str.splitlines``: that
    also breaks at form feeds, ``\x1c``-``\x1e`` and ``\u2028``, which Python allows inside
    comments and strings, and line numbers would drift from the parser's."""
    return _LINE.findall(text)
