"""``fix_available`` is decided on a libcst tree that holds only the Function classes of the
findings (``fix.context.focus_of``/``only_lines``): it must give exactly the answer of the whole
module, which is what ``--fix`` works on. Checked on every fixture file with a fixable finding.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograd_lint.analysis.source_file import SourceFile
from autograd_lint.engine import lint_text
from autograd_lint.fix.available import annotate
from autograd_lint.fix.context import FixContext, only_lines
from autograd_lint.fix.registry import FIXERS
from autograd_lint.selection import EnabledRules, SelectorLayer
from conftest import REPO_ROOT

EVERY_RULE = EnabledRules.from_layers([SelectorLayer(select=("ALL",))])


def _fixable_files() -> list[tuple[Path, str, list]]:
    found = []
    for path in sorted((REPO_ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        findings = lint_text(str(path), text, EVERY_RULE, annotate_fixes=False).findings
        if any(f.code in FIXERS for f in findings):
            found.append((path, text, findings))
    return found


def test_focused_and_whole_module_agree_on_every_fixture():
    files = _fixable_files()
    assert len(files) > 50  # the fixtures of every fixable code, and more
    focused_somewhere = 0
    for path, text, findings in files:
        def answers(focus: bool) -> list[tuple]:
            return [(f.code, f.line, f.column, f.fix_available, f.fix_safe)
                    for f in annotate(SourceFile(str(path), text=text), findings, focus=focus)]

        assert answers(True) == answers(False), path.relative_to(REPO_ROOT)
        context = FixContext(SourceFile(str(path), text=text))
        focused_somewhere += context.focused([f for f in findings if f.code in FIXERS]) is not context
    assert focused_somewhere > len(files) // 2  # the cheap path is the one usually taken


def test_blanked_lines_keep_every_kept_line_where_it_was():
    text = "import torch\r\n\r\ndef test():\r\n    x = 1\r\n    class F(torch.autograd.Function):\r\n        pass\r\ny = 2\r\n"
    masked = only_lines(text, [(5, 6)])
    assert masked.splitlines(keepends=True) == [
        "\r\n", "\r\n", "\r\n", "if 1:\r\n",
        "    class F(torch.autograd.Function):\r\n", "        pass\r\n", "\r\n",
    ]
    import libcst

    libcst.parse_module(masked)  # the nested class parses at its own indentation


@pytest.mark.parametrize("code", ["AGL104", "AGL501"])
def test_fixers_that_look_outside_the_class_get_the_whole_module(code: str):
    case = next(p for p in sorted((REPO_ROOT / "fixtures" / "fixes" / code).glob("*.py"))
                if not p.name.endswith(".fixed.py") and not p.name.startswith("nofix"))
    text = case.read_text(encoding="utf-8")
    findings = [f for f in lint_text(str(case), text, EVERY_RULE, annotate_fixes=False).findings if f.code == code]
    assert findings
    context = FixContext(SourceFile(str(case), text=text))
    assert context.focused(findings) is context


def test_the_focused_source_starts_at_the_first_kept_line_and_positions_are_the_files():
    from autograd_lint.fix.context import focused_source

    text = "import torch\r\n\r\ndef test():\r\n    x = 1\r\n    class F(torch.autograd.Function):\r\n        pass\r\ny = 2\r\n"
    source, offset = focused_source(text, [(5, 6)])
    assert offset == 3 and source == "if 1:\r\n    class F(torch.autograd.Function):\r\n        pass\r\n"
    import libcst

    context = FixContext(SourceFile("t.py", text=text), [(5, 6)])
    (name,) = [n for n in context.positions if isinstance(n, libcst.Name) and n.value == "F"]
    assert context.start(name) == (5, 11)  # line 5 of the file, not of the focused source
