"""Small helpers over libcst nodes that every part of the analysis uses."""

from __future__ import annotations

import inspect
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


# --- children, fast ---------------------------------------------------------------------------
# libcst's ``node.children`` (and its visitors) rebuild every node they pass to learn what is
# under it: 5x slower than reading the fields, and the analysis walks each method several times.
# ``children`` reads the fields in the order each class's ``_visit_and_replace_children`` visits
# them, which is libcst's own source order; tests/test_syntax_children.py checks that it gives
# exactly ``node.children`` on every node of every fixture.

_VISITED_FIELD = re.compile(r'visit_\w+\(\s*self,\s*"(\w+)"')
_FIELD_ORDER: dict[type, tuple[str, ...]] = {}
_IS_NODE: dict[type, bool] = {}


_ASK_LIBCST = ("*",)  # a class whose visiting order could not be read: use node.children


def _field_order(kind: type) -> tuple[str, ...]:
    order = _FIELD_ORDER.get(kind)
    if order is None:
        try:
            names = _VISITED_FIELD.findall(inspect.getsource(kind._visit_and_replace_children))
        except (OSError, TypeError):  # no source to read
            names = []
        order = _FIELD_ORDER[kind] = tuple(dict.fromkeys(names)) or _ASK_LIBCST
    return order


def _is_node(value: object) -> bool:
    kind = type(value)
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children``, in the same order, without rebuilding ``node``."""
    order = _field_order(type(node))
    if order is _ASK_LIBCST:
        return list(node.children)
    result = []
    for name in order:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            result.extend([item for item in value if _is_node(item)])
        elif _is_node(value):
            result.append(value)
    return result


_NEW_SCOPE = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def own_nodes(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """Every node in ``function``'s body in source order, nested scopes excluded (their own
    node is kept): a ``return`` in a helper defined inside backward is not backward's return."""
    nodes = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        current = stack.pop()
        nodes.append(current)
        if not isinstance(current, _NEW_SCOPE):
            stack.extend(reversed(children(current)))
    return nodes


def all_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` (nested scopes included), in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


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
        stack.extend(children(current))
    return result




_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str) -> list[str]:
    """The lines of a module as Python numbers them (ends kept). Not ``str.splitlines``: that
    also breaks at form feeds, ``\x1c``-``\x1e`` and ``\u2028``, which Python allows inside
    comments and strings, and line numbers would drift from the parser's."""
    return _LINE.findall(text)
