"""Fast walkers must walk exactly as the slow ones do.

``analysis.syntax.children`` reads a node's fields in libcst's visiting order instead of asking
``node.children`` (which rebuilds the node): it must give libcst's answer, node for node, on
every node of every fixture. ``analysis.ast_walk.walk`` must give ``ast.walk``'s nodes in
``ast.walk``'s order, less the Load/Store/Del markers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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


def test_the_fast_ast_walk_is_ast_walk_without_the_context_markers():
    import ast

    from autograd_lint.analysis.ast_walk import walk

    torch_files = []
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        torch_root = Path(next(iter(spec.submodule_search_locations)))
        torch_files = sorted(torch_root.glob("nn/**/*.py"))[:150]
    checked = 0
    for path in [*sorted((REPO_ROOT / "fixtures").rglob("*.py")), *torch_files]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        expected = [node for node in ast.walk(tree) if not isinstance(node, ast.expr_context)]
        assert list(walk(tree)) == expected, path
        checked += 1
    assert checked > 100
