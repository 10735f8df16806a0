"""The module index (``analysis.module_index``): the cheap ``ast`` pass over a whole module.

Its walk goes only where the text says something of interest is, and its regexes are written
for speed, so what a plainer walk or pattern finds by construction is pinned here."""

from __future__ import annotations

import ast
import re

import pytest

from autograd_lint.analysis.module_index import _gradcheck_and_apply, _structure_lines, build_module_index
from conftest import REPO_ROOT

MODULE = '''\
import torch
from ops import Scale as S


class Local(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x


def helper(x, flag):
    if flag:
        for _ in range(2):
            try:
                y = Local()(x)
            finally:
                pass
    return S()(x) + Local.apply(x) + NotAFunction()(x)


class NotAFunction:
    pass
'''


def test_calls_of_function_classes_are_found_inside_nested_blocks():
    tree = ast.parse(MODULE)
    index = build_module_index(tree, MODULE, frozenset({"Scale", "Local"}))
    assert sorted((name, site.line, site.column) for name, site in index.instantiations) == [
        ("Local", 15, 21), ("S", 18, 12)]
    assert index.apply_arg_counts == {"Local": [1]}
    # Without the project's names, only the file's own Function classes are known.
    alone = build_module_index(tree, MODULE)
    assert [name for name, _ in alone.instantiations] == ["Local"]
    # What the project facts read is there without the search for calls.
    facts_only = build_module_index(tree, MODULE, instantiations=False)
    assert facts_only.apply_arg_counts == {"Local": [1]} and facts_only.apply_lines == {"Local": [18]}


def test_structure_lines_are_those_a_line_anchored_pattern_finds():
    anchored = re.compile(r"^[ \t]*(?:class|import|from)[ \t]", re.M)

    def expected(text: str) -> set[int]:
        return {text.count("\n", 0, match.start()) + 1 for match in anchored.finditer(text)}

    texts = ["class A: pass\nimport x\n\n  from y import z\n", "\nclass B:\n", "", "import",
             "x\nfrom\tq import r", "\tclass C:\n    pass\nclassy = 1\n"]
    texts += [path.read_text(encoding="utf-8", errors="replace")
              for path in sorted((REPO_ROOT / "fixtures").rglob("*.py"))]
    for text in texts:
        assert _structure_lines(text) == expected(text), text[:80]


def test_a_call_is_of_the_whole_name():
    text = ("import torch\n\n\nclass Fn(torch.autograd.Function):\n    pass\n\n\n"
            "a = Fn ()\nb = MyFn()\nc = Fn_2()\nd = x.Fn()\ne = [Fn(\n)]\n")
    index = build_module_index(ast.parse(text), text)
    assert [site.line for _, site in index.instantiations] == [8, 12]


def test_a_call_is_collected_once_when_its_statement_spans_a_line_of_apply():
    text = ("import torch\n\n\nclass Fn(torch.autograd.Function):\n    pass\n\n\n"
            "y = (Fn.apply(x),\n     Fn())\n")
    index = build_module_index(ast.parse(text), text)
    assert [site.line for _, site in index.instantiations] == [9]
    assert index.apply_arg_counts == {"Fn": [1]}


def test_many_class_names_find_the_same_call_lines_as_few() -> None:
    """Past 16 names, calls are found by one scan of every `name(` instead of one search per
    name (a generated file of 30,000 classes read its text 30,000 times): same lines either way."""
    from autograd_lint.analysis import module_index

    text = "\n".join([
        "a = Fn0(x)", "b = obj.Fn1 (y)", "c = xFn2(z)", "d = Fn3x(z)", "e = Fn4", "f = _Fn5(q)",
        "g = Fn6\t(", "h = [Fn7(i) for i in r]", "k = Fn19(x)", "m = pkg.Fn3(1)", "n = Fn8(",
    ])
    names = [f"Fn{i}" for i in range(20)] + ["pkg.Fn3"]
    one_by_one = set().union(*(module_index._call_lines(text, [name], apply_and_gradcheck=False) for name in names))
    assert module_index._call_lines(text, names, apply_and_gradcheck=False) == one_by_one == {1, 2, 7, 8, 9, 10, 11}


@pytest.mark.parametrize("text", [".apply", ".applyx", "a.apply_(", "F.apply(x)\n", "gradchecks.apply", ".apply\u00e9",
                                  ".apply\u0661", "gradcheckgradcheck", "x = Fn.apply\n# gradcheck(\n", ""])
def test_gradcheck_and_apply_are_found_as_the_regex_finds_them(text):
    # `_call_lines` scans for both literals with str.find: the same places as the regex it replaced
    # (``\b`` after `.apply`: no word character, Unicode letters and digits included, follows).
    assert sorted(_gradcheck_and_apply(text)) == [m.start() for m in re.finditer(r"gradcheck|\.apply\b", text)]
