"""Small helpers over libcst nodes that every part of the analysis uses."""

from __future__ import annotations

import inspect
import re
import threading
from typing import Iterator, Optional, Sequence, Union

import libcst as cst
from libcst import CSTNode


def parse_module(source: str) -> cst.Module:
    """``cst.parse_module`` without libcst's check of each node as it is built
    (``CSTNode.__post_init__`` calls ``_validate``): the parser's own output is valid by
    construction, and the check costs about a fifth of a parse (bench/NOTES.md). Nodes built
    elsewhere (the fixers') are still checked."""
    with _unchecked_nodes():
        return cst.parse_module(source)


_CHECKING = threading.Lock()
_LIBCST_CHECK = CSTNode.__dict__.get("__post_init__")
_unchecked_depth = 0


class _unchecked_nodes:
    """While any thread is inside, ``CSTNode.__post_init__`` does nothing; the last to leave puts
    libcst's back (a counter, so that parses in two threads cannot leave it off)."""

    def __enter__(self) -> None:
        global _unchecked_depth
        with _CHECKING:
            if _unchecked_depth == 0 and _LIBCST_CHECK is not None:
                CSTNode.__post_init__ = _no_check  # type: ignore[method-assign]
            _unchecked_depth += 1

    def __exit__(self, *exc: object) -> None:
        global _unchecked_depth
        with _CHECKING:
            _unchecked_depth -= 1
            if _unchecked_depth == 0 and _LIBCST_CHECK is not None:
                CSTNode.__post_init__ = _LIBCST_CHECK  # type: ignore[method-assign]


def _no_check(self: CSTNode) -> None:
    return None


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


def constant_index(node: cst.CSTNode) -> Optional[int]:
    """``x[1]`` -> 1: the subscript's single non-negative integer index; None for anything else."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
            return int(index.value.value)
    return None


def literal_key(node: cst.CSTNode) -> Union[int, str, None]:
    """The subscript key written as a literal: ``1`` -> 1, ``-1`` -> -1, ``"a"`` -> "a"; else None."""
    if isinstance(node, cst.Integer):
        return int(node.value)
    if (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
            and isinstance(node.expression, cst.Integer)):
        return -int(node.expression.value)
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return node.evaluated_value
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
# them, which is libcst's own source order. That order is checked against ``node.children`` on
# the first node of each class (a class that fails is asked ``node.children`` from then on), and
# tests/test_syntax_children.py checks it on every node of every fixture.

_VISITED_FIELD = re.compile(r'visit_\w+\(\s*self,\s*"(\w+)"')
_FIELD_ORDER: dict[type, tuple[str, ...]] = {}
_IS_NODE: dict[type, bool] = {}


_ASK_LIBCST = ("*",)  # a class whose visiting order could not be read: use node.children


def _field_order(node: cst.CSTNode) -> tuple[str, ...]:
    """The fields of ``node``'s class in visiting order (``_ASK_LIBCST`` if not known), learnt
    from the first node of the class."""
    kind = type(node)
    order = _FIELD_ORDER.get(kind)
    if order is None:
        order = _ASK_LIBCST
        for candidate in (_fields_named_in_code, _fields_named_in_source):
            names = candidate(kind)
            if names is not None and _same_nodes(_children_by(names, node), node.children):
                order = names
                break
        _FIELD_ORDER[kind] = order
    return order


def _same_nodes(ours: Sequence[cst.CSTNode], libcsts: Sequence[cst.CSTNode]) -> bool:
    return len(ours) == len(libcsts) and all(a is b for a, b in zip(ours, libcsts))


def _fields_named_in_code(kind: type) -> Optional[tuple[str, ...]]:
    """The strings of the visiting method's compiled code, in order: the field names it passes
    to ``visit_required(self, "value", ...)`` and the like (100x faster than reading its source)."""
    code = getattr(kind._visit_and_replace_children, "__code__", None)
    if code is None:
        return None
    names = tuple(dict.fromkeys(c for c in code.co_consts if isinstance(c, str)))
    fields = getattr(kind, "__dataclass_fields__", {})
    return names if all(name in fields for name in names) else None


def _fields_named_in_source(kind: type) -> Optional[tuple[str, ...]]:
    try:
        return tuple(dict.fromkeys(_VISITED_FIELD.findall(inspect.getsource(kind._visit_and_replace_children))))
    except (OSError, TypeError):  # no source to read
        return None


def _is_node(value: object) -> bool:
    kind = type(value)
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known


def _children_by(order: tuple[str, ...], node: cst.CSTNode) -> list[cst.CSTNode]:
    result = []
    for name in order:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            result.extend([item for item in value if _is_node(item)])
        elif _is_node(value):
            result.append(value)
    return result


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children``, in the same order, without rebuilding ``node``."""
    order = _field_order(node)
    if order is _ASK_LIBCST:
        return list(node.children)
    return _children_by(order, node)


# Tokens and whitespace: they hold no code, and nothing looks for them in a walk (they are read
# through their parent's fields: ``node.operator``, ``element.comma``). Two nodes in three of a
# method's body are such, so the walks below leave them out.
TRIVIA = (
    cst.BaseParenthesizableWhitespace, cst.Newline, cst.TrailingWhitespace, cst.EmptyLine, cst.Comment,
    cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.ImportStar, cst.Asynchronous,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp,
)
_HOLDS_CODE: dict[type, bool] = {}


def _holds_code(kind: type) -> bool:
    """Is ``kind`` a node class other than a token or whitespace?"""
    known = _HOLDS_CODE.get(kind)
    if known is None:
        known = _HOLDS_CODE[kind] = issubclass(kind, cst.CSTNode) and not issubclass(kind, TRIVIA)
    return known


def code_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``children(node)`` less tokens and whitespace (``TRIVIA``), in the same order."""
    order = _field_order(node)
    if order is _ASK_LIBCST:
        return [child for child in node.children if _holds_code(type(child))]
    holds_code = _HOLDS_CODE  # asked for every field of every node: a local lookup, no call
    result = []
    for name in order:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:
                known = holds_code.get(type(item))
                if known or (known is None and _holds_code(type(item))):
                    result.append(item)
        else:
            known = holds_code.get(kind)
            if known or (known is None and _holds_code(kind)):
                result.append(value)
    return result


_NEW_SCOPE = (cst.FunctionDef, cst.Lambda, cst.ClassDef)  # no subclasses in libcst: compared by type


def own_nodes(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """Every node in ``function``'s body in source order, nested scopes excluded (their own
    node is kept): a ``return`` in a helper defined inside backward is not backward's return.
    Tokens and whitespace are left out (``TRIVIA``)."""
    nodes = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        current = stack.pop()
        nodes.append(current)
        if type(current) not in _NEW_SCOPE:
            stack.extend(reversed(code_children(current)))
    return nodes


def all_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` (nested scopes included), in source order, less tokens and
    whitespace (``TRIVIA``) under it."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(code_children(current)))


def target_names(target: Optional[cst.CSTNode]) -> list[str]:
    """The names an assignment, ``for``, ``with ... as`` or ``del`` target binds (``a, (b, *c)``:
    a, b, c); attributes and subscripts bind none."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    if isinstance(target, cst.Del):
        return target_names(target.target)
    return []


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
        stack.extend(code_children(current))
    return result
