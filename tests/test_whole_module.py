"""``analysis.whole_module.assemble`` must give the very tree ``cst.parse_module`` gives, and
``AssembledModule.positions`` the numbers ``node_positions`` gives for it, in the same order: the
``--fix`` driver makes its edits on that tree and finds nodes by those positions. Checked on
every fixture file and on layouts where the two could part (then ``assemble`` gives None and the
driver parses the whole text)."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest

from autograd_lint.analysis.positions import node_positions
from autograd_lint.source import source_lines
from autograd_lint.analysis.whole_module import assemble
from conftest import REPO_ROOT


def _assembled(text: str):
    return assemble(source_lines(text), ast.parse(text))


def _assert_same_as_parse(text: str, name: str = "", assembled=None, whole=None) -> None:
    assembled = assembled or _assembled(text)
    assert assembled is not None, name
    whole = whole or cst.parse_module(text)
    assert assembled.module.code == text, name
    assert assembled.module.deep_equals(whole), name
    ours = [(type(node).__name__, position) for node, position in assembled.positions().items()]
    assert ours == [(type(node).__name__, position) for node, position in node_positions(whole).items()], name
    # Keyed by the nodes of the assembled tree, each once: no node of a class's own tree is left over.
    assert set(assembled.positions()) == set(node_positions(assembled.module)), name


def test_the_tree_and_positions_of_a_parse_on_every_fixture():
    checked = 0
    for path in sorted((REPO_ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            whole = cst.parse_module(text)
            ast.parse(text)
        except (cst.ParserSyntaxError, SyntaxError, ValueError):
            continue  # the AGL000 fixtures
        assembled = _assembled(text)
        if assembled is None:
            continue
        _assert_same_as_parse(text, str(path.relative_to(REPO_ROOT)), assembled, whole)
        checked += 1
    assert checked > 250


LAYOUTS = {
    "comments and blank lines around classes": """\
        # header
        import torch


        # about A
        @decorator  # one
        # between
        @other(1)
        class A(torch.autograd.Function):
            x = 1

        # after A, at column 0

        class B(A): pass
        def f():
            return 1
        class C:
            def g(self):
                pass
        # the end
        """,
    "CRLF line ends": "import torch\r\nclass A(torch.autograd.Function):\r\n    x = 1\r\n\r\ny = 2\r\n",
    "tabs": "def g():\n\treturn 1\nclass A:\n\tdef f(self):\n\t\treturn [\n\t\t\t1,  # one\n\t\t]\n\n\n# trailing\n",
    "a class last": "x = 1\nclass A:\n    pass\n",
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_the_tree_and_positions_of_a_parse_on_layouts(name):
    _assert_same_as_parse(textwrap.dedent(LAYOUTS[name]) if "\t" not in LAYOUTS[name] else LAYOUTS[name], name)


GIVES_UP = {
    # libcst gives the indented comment to the class's block (its footer), the skeleton would
    # give it to the next statement
    "an indented comment after a class": "class A:\n    x = 1\n    # the block's\ny = 2\n",
    "a line of spaces after a class": "class A:\n    x = 1\n    \ny = 2\n",
    # the whole text's indentation is the first block's (two spaces); a class alone's differs
    "indentation that differs between pieces": "def f():\n  return 1\nclass A:\n    x = 1\n",
    "no line end at the end": "class A:\n    x = 1",
    "no class": "x = 1\n",
    # the skeleton has no block to take tabs from (libcst then says four spaces)
    "tabs in the classes only": "class A:\n\tx = 1\n",
    "a nested class only": "def f():\n    class A:\n        pass\n",
}


@pytest.mark.parametrize("name", sorted(GIVES_UP))
def test_gives_up_where_a_parse_could_differ(name):
    text = GIVES_UP[name]
    assert _assembled(text) is None
    if name.startswith("an indented comment"):  # the reason: libcst's own tree
        assert cst.parse_module(text).body[0].body.footer


def test_the_class_trees_are_used_not_copied():
    # The fixers' edits are keyed by nodes: those of the class trees the lint read.
    text = "import torch\nclass A(torch.autograd.Function):\n    x = 1\n"
    trees = []

    def class_tree(node):
        from autograd_lint.analysis.snippet import parse_class

        parsed = parse_class(source_lines(text), node)
        trees.append(parsed)
        return parsed

    assembled = assemble(source_lines(text), ast.parse(text), class_tree)
    assert assembled.module.body[1].body is trees[0].node.body


def test_code_of_an_edited_module_generates_only_the_changed_classes():
    from autograd_lint.fix.edits import Round

    text = textwrap.dedent(LAYOUTS["comments and blank lines around classes"])
    assembled = _assembled(text)
    module = assembled.module
    positions = assembled.positions()
    one = next(n for n, where in positions.items() if isinstance(n, cst.Integer) and where[0] == 10)  # A's x = 1
    round_ = Round()
    round_.edits[one] = cst.Integer("2")
    edited = round_.apply(module)
    assert assembled.code_of(edited) == edited.code == text.replace("    x = 1\n", "    x = 2\n", 1)
    # A statement added outside the classes: the whole code is generated.
    added = edited.with_changes(body=[*edited.body, cst.parse_statement("z = 3\n")])
    assert assembled.code_of(added) == added.code
