"""Fast walkers must walk exactly as the slow ones do.

``analysis.syntax.children`` reads a node's fields in libcst's visiting order instead of asking
``node.children`` (which rebuilds the node): it must give libcst's answer, node for node, on
every node of every fixture. ``analysis.ast_walk.walk`` must give ``ast.walk``'s nodes in
``ast.walk``'s order, less the Load/Store/Del markers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import libcst as cst

from autograd_lint.analysis.syntax import (
    TRIVIA,
    _fields_named_in_code,
    _fields_named_in_source,
    all_nodes,
    children,
    code_children,
)
from conftest import REPO_ROOT


def _fixture_modules():
    for path in sorted((REPO_ROOT / "fixtures").rglob("*.py")):
        try:
            yield path, cst.parse_module(path.read_bytes())
        except cst.ParserSyntaxError:
            continue  # the AGL000 fixtures


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


def test_the_fields_read_from_compiled_code_are_those_read_from_source():
    """The fast way to learn a class's visiting order (the string constants of its compiled
    ``_visit_and_replace_children``) gives what reading its source gives, for every node class."""
    import inspect

    kinds = [k for k in vars(cst).values()
             if inspect.isclass(k) and issubclass(k, cst.CSTNode) and not inspect.isabstract(k)]
    assert len(kinds) > 150
    for kind in kinds:
        assert _fields_named_in_code(kind) == _fields_named_in_source(kind), kind.__name__


def test_code_children_are_children_less_tokens_and_whitespace_which_hold_no_code():
    trivia = 0
    for path, module in _fixture_modules():
        stack = [module]
        while stack:
            node = stack.pop()
            expected = [child for child in node.children if not isinstance(child, TRIVIA)]
            got = code_children(node)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), path.name
            if isinstance(node, TRIVIA):  # leaving it out loses no code under it
                trivia += 1
                assert all(isinstance(n, TRIVIA) for n in list(_every_node(node))[1:]), path.name
            stack.extend(node.children)
    assert trivia > 10_000


def _every_node(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


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
