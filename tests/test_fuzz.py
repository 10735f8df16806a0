"""Property tests: no input makes the analysis fail, and findings are stable (issue 3).

Two sources of odd code: programs generated from Python's grammar (hypothesmith), placed in
the methods of a Function class, and the fixtures mutated the way real edits break files
(lines deleted, statements swapped, files cut short). Each is linted with every rule on; the
property is "no internal error, no exception, and the same findings on a second run".

CI runs a short, fixed number of examples. The long run (10,000 generated programs)::

    AUTOGRAD_LINT_FUZZ=long python -m pytest tests/test_fuzz.py -q
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograd_lint.catalogue import RULES
from autograd_lint.engine import CodeSet, lint_text

LONG = os.environ.get("AUTOGRAD_LINT_FUZZ") == "long"
EVERY_RULE = CodeSet(frozenset(code for code, info in RULES.items() if info.static))
FIXTURES = sorted((Path(__file__).resolve().parents[1] / "fixtures").rglob("*.py"))
FIXTURE_TEXTS = [p.read_text(encoding="utf-8", errors="replace") for p in FIXTURES]

fuzz_settings = settings(
    max_examples=10_000 if LONG else 60,
    deadline=None,
    derandomize=not LONG,  # CI: the same examples every run, so a red CI is reproducible
    suppress_health_check=list(HealthCheck),
)


def assert_lints_cleanly(source: str) -> None:
    first = lint_text("fuzzed.py", source, EVERY_RULE)
    assert first.internal_errors == [], "\n".join(first.internal_errors) + "\n--- source ---\n" + source
    second = lint_text("fuzzed.py", source, EVERY_RULE)
    assert second.findings == first.findings


CLASS_TEMPLATE = """\
import torch
from torch.autograd import Function


class Fuzzed(Function):
    @staticmethod
    def forward(ctx, x, w):
{forward}
        return x * w

    @staticmethod
    def backward(ctx, grad_output):
{backward}
        return grad_output, None


def test_uses():
    return Fuzzed.apply(torch.ones(2), 3.0), torch.autograd.gradcheck(Fuzzed.apply, (torch.ones(2),))
"""


def _indent(program: str) -> str:
    return textwrap.indent(program, " " * 8) or "        pass"


@fuzz_settings
@given(forward=hypothesmith.from_grammar(), backward=hypothesmith.from_grammar())
def test_generated_programs_inside_a_function_class(forward: str, backward: str):
    assert_lints_cleanly(CLASS_TEMPLATE.format(forward=_indent(forward), backward=_indent(backward)))


@fuzz_settings
@given(program=hypothesmith.from_grammar())
def test_generated_modules(program: str):
    assert_lints_cleanly("import torch\nfrom torch.autograd import Function\n" + program)


@st.composite
def mutated_fixture(draw) -> str:
    lines = draw(st.sampled_from(FIXTURE_TEXTS)).splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        kind = draw(st.sampled_from(["delete", "swap", "truncate", "dedent", "duplicate"]))
        i = draw(st.integers(0, len(lines) - 1))
        j = draw(st.integers(0, len(lines) - 1))
        if kind == "delete":
            del lines[i]
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "truncate":
            lines = lines[:i] + [lines[i][: draw(st.integers(0, len(lines[i])))]]
        elif kind == "dedent":
            lines[i] = lines[i].lstrip()
        else:
            lines.insert(j, lines[i])
    return "".join(lines)


@fuzz_settings
@given(source=mutated_fixture())
def test_mutated_fixtures(source: str):
    assert_lints_cleanly(source)
