"""Suppression comments, as flake8 reads them: the unit of autograd_lint.suppression."""

from autograd_lint.findings import Finding
from autograd_lint.suppression import apply_suppressions, comments, disabled_codes, noqa_codes


def finding(line: int, code: str = "AGL201") -> Finding:
    return Finding(path="m.py", line=line, column=1, code=code, message="m")


def test_noqa_forms():
    assert noqa_codes("x = 1") is None
    assert noqa_codes("x = 1  # noqa") == frozenset()
    assert noqa_codes("x = 1  # NOQA") == frozenset()
    assert noqa_codes("x = 1  # noqa: AGL201") == {"AGL201"}
    assert noqa_codes("x = 1  # noqa:AGL201,AGL304") == {"AGL201", "AGL304"}
    assert noqa_codes("x = 1  # noqa: AGL201 AGL304") == {"AGL201", "AGL304"}


def test_noqa_suppresses_only_the_named_codes_on_that_line():
    lines = ["ctx.x = x  # noqa: AGL201\n", "ctx.y = y  # noqa: E501\n", "ctx.z = z  # noqa\n", "ok\n"]
    found = [finding(1), finding(2), finding(3), finding(3, "AGL304"), finding(4)]
    kept = apply_suppressions(found, lines, [])
    assert [(f.line, f.code) for f in kept] == [(2, "AGL201"), (4, "AGL201")]


def test_noqa_prefix_and_flake8_mode():
    lines = ["ctx.x = x  # noqa: AGL2\n"]
    assert apply_suppressions([finding(1)], lines, []) == []
    # Under flake8, flake8 itself applies noqa: the engine must leave the finding in.
    assert apply_suppressions([finding(1)], lines, [], honour_noqa=False) == [finding(1)]


def test_class_disable_covers_the_whole_class_and_only_it():
    lines = [
        "@decorator\n",
        "class Fn(Function):  # autograd-lint: disable=AGL201, AGL3\n",
        "    ctx.x = x\n",
        "    g.mul_(2)\n",
        "outside = 1\n",
    ]
    assert disabled_codes(lines[1]) == {"AGL201", "AGL3"}
    found = [finding(3), finding(4, "AGL301"), finding(4, "AGL402"), finding(5)]
    kept = apply_suppressions(found, lines, [(2, 1, 4)])
    assert [(f.line, f.code) for f in kept] == [(4, "AGL402"), (5, "AGL201")]


def test_comments_naming_agl_codes_are_found_in_any_case():
    # The quick check before tokenizing matches the lowercased text: NOQA and agl in any case pass
    # it; the file is then tokenized, and every noqa comment is kept (not the string's).
    text = 'x = 1  # NoQa: agl201\ny = "# noqa: AGL201"  # noqa: E501\nz = 2  # Autograd-Lint: disable=AGL201\n'
    assert [(c.line, c.text) for c in comments(text)] == [
        (1, "# NoQa: agl201"), (2, "# noqa: E501"), (3, "# Autograd-Lint: disable=AGL201")]
    assert comments("x = 1  # noqa: E501\n") == []
