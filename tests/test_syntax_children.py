"""``analysis.syntax.children`` reads a node's fields in libcst's visiting order instead of asking
``node.children`` (which rebuilds the node): it must give exactly libcst's answer, node for node,
on every node of every fixture."""

from __future__ import annotations

import libcst as cst

from autograd_lint.analysis.syntax import all_nodes, children
from conftest import REPO_ROOT


def test_children_is_libcsts_answer_on_every_node_of_every_fixture():
    kinds = set()
    nodes = 0
    for path in sorted((REPO_ROOT / "fixtures").rglob("*.py")):
        try:
            module = cst.parse_module(path.read_bytes())
        except cst.ParserSyntaxError:
            continue  # the AGL000 fixtures
        stack = [module]
        while stack:
            node = stack.pop()
            expected = node.children
            got = children(node)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), (
                f"{path.name}: {type(node).__name__}")
            kinds.add(type(node))
            nodes += 1
            stack.extend(expected)
    assert nodes > 100_000 and len(kinds) > 100  # the fixtures use most of libcst's node classes


def test_all_nodes_walks_in_source_order():
    module = cst.parse_module("a = f(b, c=d)\n")
    names = [n.value for n in all_nodes(module) if isinstance(n, cst.Name)]
    assert names == ["a", "f", "b", "c", "d"]
