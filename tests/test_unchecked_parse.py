"""analysis.syntax.parse_module: libcst's parse without its per-node check gives the same tree,
and leaves the check on for the nodes built afterwards (the fixers')."""

import threading

import libcst as cst
import pytest

from autograd_lint.analysis.syntax import parse_module

SOURCE = "class F(Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x * 2  # c\n"


def test_same_tree_as_libcst():
    assert parse_module(SOURCE).deep_equals(cst.parse_module(SOURCE))
    assert parse_module(SOURCE).code == SOURCE


def test_nodes_built_afterwards_are_still_checked():
    parse_module(SOURCE)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # libcst's own check: a Name must be an identifier


def test_parses_in_threads_leave_the_check_on():
    threads = [threading.Thread(target=lambda: [parse_module(SOURCE) for _ in range(50)]) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
