"""``analysis.positions.node_positions`` must give exactly what libcst's ``PositionProvider``
gives, for every node: findings are placed and fixes find their nodes by these numbers. Checked
on every fixture file (and on code with line continuations, CRLF line ends and tabs), against
the installed libcst, so a libcst release that changes how positions are recorded fails here.
"""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from autograd_lint.analysis.positions import _positions_by_wrapper, node_positions
from conftest import REPO_ROOT

ODD_LAYOUTS = [
    "x = (1,\r\n     2)\r\ny = 'a' \\\r\n    'b'\r\n",
    "class A:\n\tdef f(self):\n\t\treturn [\n\t\t\t1,  # one\n\t\t]\n\n\n# trailing\n",
    'def f(x):\n    """Doc.\n\n    more\n    """\n    return f"{x!r:>{10}}" if x else None\n',
    "@decorator\n\n# between\n@other(1)\nclass B(Base, metaclass=M):\n    x: int = 1; y = 2\n",
    "",
    "pass",
]


def _libcst_positions(module: cst.Module) -> dict:
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in ranges.items()}


def _fixture_texts() -> list[tuple[str, str]]:
    texts = []
    for path in sorted((REPO_ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue  # the AGL000 fixtures
        texts.append((str(path.relative_to(REPO_ROOT)), text))
    return texts


def test_the_same_positions_as_libcst_on_every_fixture():
    texts = _fixture_texts()
    assert len(texts) > 100
    for name, text in texts:
        module = cst.parse_module(text)
        ours = node_positions(module)
        assert ours == _libcst_positions(module), name
        assert list(ours) != [] and module in ours


@pytest.mark.parametrize("text", ODD_LAYOUTS)
def test_the_same_positions_as_libcst_on_odd_layouts(text):
    module = cst.parse_module(text)
    assert node_positions(module) == _libcst_positions(module)


def test_positions_are_keyed_by_the_very_nodes_of_the_tree():
    # The fixers replace nodes found by their positions: a copy of the tree would not do.
    module = cst.parse_module("def f(x):\n    return x\n")
    ret = module.body[0].body.body[0].body[0]
    assert node_positions(module)[ret] == (2, 4, 2, 12)
    assert _positions_by_wrapper(module)[ret] == (2, 4, 2, 12)
