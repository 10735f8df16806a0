"""``--diff``'s unified diff (autograd_lint/fix/write.py): git applies it and gets the fixed text,
on any pair of texts, and on a file whose lines repeat from class to class it shows only what
changed (difflib's whole-range matching showed two and a half times as many lines there)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hypothesis import given, settings, strategies as st

from autograd_lint.fix.write import unified_diff

LINE = st.sampled_from(["a\n", "b\n", "c\n", "    return x\n", "\n", "class A:\n", "x = 1\n", "y = 2\n"])


def _apply(diff: str, before: str) -> str:
    """``before`` with ``diff`` applied, as a reader of the diff would (hunk by hunk)."""
    old = before.splitlines(keepends=True)
    new: list[str] = []
    position = 0
    lines = diff.splitlines(keepends=True)[2:]  # after the --- and +++ headers
    for line in lines:
        if line.startswith("@@"):
            start = int(line.split()[1][1:].split(",")[0])
            length = line.split()[1].split(",")
            start_index = start - 1 if len(length) == 1 or length[1] != "0" else start
            new.extend(old[position:start_index])
            position = start_index
        elif line.startswith(" "):
            assert old[position] == line[1:]
            new.append(line[1:])
            position += 1
        elif line.startswith("-"):
            assert old[position] == line[1:]
            position += 1
        elif line.startswith("+"):
            new.append(line[1:])
    new.extend(old[position:])
    return "".join(new)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=30), st.lists(LINE, max_size=30))
def test_the_diff_turns_the_old_text_into_the_new_one(before_lines, after_lines):
    before, after = "".join(before_lines), "".join(after_lines)
    diff = unified_diff("m.py", before, after)
    assert (diff == "") == (before == after)
    if diff:
        assert _apply(diff, before) == after


CLASS = """
class Scale{i}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.x
"""

FIXED = """
class Scale{i}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x
"""


def test_a_file_of_repeated_classes_shows_only_the_changed_lines(tmp_path: Path):
    before = "import torch\n" + "".join(CLASS.format(i=i) for i in range(300))
    after = "import torch\n" + "".join(FIXED.format(i=i) for i in range(300))
    diff = unified_diff("ops.py", before, after)
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("---", "+++"))]
    assert len(changed) == 300 * 5  # per class: one line replaced, one rewritten, one added
    (tmp_path / "ops.py").write_text(before)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=diff, text=True, check=True)
    assert (tmp_path / "ops.py").read_text() == after
