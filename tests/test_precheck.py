"""The text pre-check (``analysis.precheck``): what a file can contribute, read without parsing.
Its regexes are written for speed (a literal first), so the edge cases a plainer pattern
handles by construction are pinned here."""

from __future__ import annotations

from autograd_lint.analysis.precheck import imported_words, summarize


def test_class_bases_only_from_class_statements():
    text = (
        "# a subclass Hidden(\n"          # not a class statement, and it must not hide the next one
        "class Real(torch.autograd.Function):\n"
        "    class Inner (Base) :\n"
        "        pass\n"
        "xclass Y(Z)\n"                   # not the keyword
        "\tclass Multi(\n    A,\n    B):\n"
    )
    summary = summarize(text)
    assert summary.defines_function
    assert summary.base_words == frozenset({"torch", "autograd", "Function", "Base", "A", "B"})


def test_gradcheck_calls_and_imports_count_mentions_do_not():
    for text in ("y = gradcheck(f, x)", "torch.autograd.gradgradcheck (f, x)", "from m import gradcheck as check"):
        assert summarize(text).mentions_gradcheck, text
    for text in ("my_gradcheck(f)", "# gradcheck(f, x)", "gradcheck_wrapper=None", "_gradgradcheck(f)"):
        assert not summarize(text).mentions_gradcheck, text


def test_names_imported_from_the_standard_library_are_not_imported_words():
    words = imported_words("from typing import Type\nfrom mylib.ops import Scale as S\nfrom . import local\n")
    assert "Type" not in words
    assert {"Scale", "S", "local"} <= words


def test_function_chars_measure_the_function_classes_only():
    function_class = (
        "class Double(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "# a comment at the margin does not end the class\n"
        "        return 2 * x\n"
    )
    text = "import torch\n\n" + function_class + "\nclass Module(torch.nn.Module):\n    pass\n"
    assert summarize(text).function_chars == len(function_class)
    assert summarize("class Module(torch.nn.Module):\n    pass\n").function_chars == 0
