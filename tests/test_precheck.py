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


def test_a_function_class_is_one_derived_from_a_name_of_torchs_function_or_an_alias_of_it():
    for base in ("torch.autograd.Function", "Function", "autograd.function.InplaceFunction",
                 "_SingleLevelFunction", "Mixin, Function"):
        assert summarize(f"class X({base}):\n    pass\n").defines_function, base
    aliased = "from torch.autograd import Function as AutogradFn\n\nclass X(AutogradFn):\n    pass\n"
    assert summarize(aliased).defines_function
    inplace = "from torch.autograd.function import InplaceFunction  as  IF\nclass X(IF): pass\n"
    assert summarize(inplace).defines_function
    # Words that merely end in Function (pattern-matcher classes, UserDefinedFunction, ...)
    # are not torch's; a subclass of a project's `MyBaseFunction` is found once that is known.
    for text in ("class X(CallFunction):\n    pass\n", "class X(MyBaseFunction): pass\n",
                 "from m import CallFunction as Function2\nclass X(Function2): pass\n"):
        assert not summarize(text).defines_function, text


def test_aliases_and_imported_names_are_read_from_import_statements_whole():
    """An alias of Function is an import's (a docstring's "Function as F" is none), and an import
    that a backslash continues, or parentheses, is read to its end."""
    continued = ("from torch.autograd import Tensor, \\\n    Function as AutogradFn\n"
                 "class X(AutogradFn):\n    pass\n")
    assert summarize(continued).defines_function
    assert summarize(continued.replace("\n", "\r\n")).defines_function
    parenthesised = "from torch.autograd import (\n    Function as AutogradFn,\n)\nclass X(AutogradFn): pass\n"
    assert summarize(parenthesised).defines_function
    in_a_docstring = '"""Use torch.autograd.Function as Base."""\nclass X(Base):\n    pass\n'
    assert not summarize(in_a_docstring).defines_function
    assert {"MyFn", "Other"} <= imported_words("from .ops import Other, \\\n    MyFn\nx = 1\n")


def test_a_function_class_derived_from_an_alias_is_linted(tmp_path):
    from autograd_lint.engine import CodeSet, lint_paths

    path = tmp_path / "ops.py"
    path.write_text(
        "import torch\nfrom torch.autograd import Function as AutogradFn\n\n\n"
        "class Square(AutogradFn):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        ctx.x = x\n        return x * x\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return 2 * ctx.x * grad\n"
    )
    (result,) = lint_paths([str(path)], lambda _: CodeSet(frozenset({"AGL201"})))
    assert result.function_classes == 1
    assert [(f.code, f.line) for f in result.findings] == [("AGL201", 8)]
