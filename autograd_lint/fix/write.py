"""Getting a fixed text onto disk (atomically) or onto the screen (as a unified diff)."""

from __future__ import annotations

import bisect
import difflib
import os
import stat

from autograd_lint.source import source_lines


def write_atomically(path: str, data: bytes) -> None:
    """Replace ``path``'s content with ``data``: a reader sees the old file or the new one, never
    half of it. The temporary file lives in the same directory (``os.replace`` cannot cross file
    systems) and gets the original's permission bits. A symbolic link stays a link: its target
    is what gets replaced."""
    target = os.path.realpath(path)
    mode = stat.S_IMODE(os.stat(target).st_mode)
    directory, name = os.path.split(target)
    import tempfile  # here: every lint run loads this module, few write a fix

    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".autograd-lint-fix")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def unified_diff(path: str, before: str, after: str) -> str:
    """``--- a/path`` / ``+++ b/path`` diff, as ruff and git print it, which ``git apply`` takes."""
    old_name, new_name = diff_names(path)
    old_lines, new_lines = source_lines(before), source_lines(after)
    matcher = _AnchoredMatcher(None, old_lines, new_lines)
    lines = []
    for line in _unified_lines(matcher, old_lines, new_lines, old_name, new_name):
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return "".join(lines)


def _unified_lines(matcher, old: list[str], new: list[str], old_name: str, new_name: str, context: int = 3):
    """difflib.unified_diff's lines, from ``matcher``'s opcodes (difflib.unified_diff builds its own
    matcher)."""
    groups = list(matcher.get_grouped_opcodes(context))
    if not groups:
        return
    yield f"--- {old_name}\n"
    yield f"+++ {new_name}\n"
    for group in groups:
        first, last = group[0], group[-1]
        yield f"@@ -{_hunk_range(first[1], last[2])} +{_hunk_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in old[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in old[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in new[j1:j2])


def _hunk_range(start: int, stop: int) -> str:
    """A hunk header's range (``start,length``; an empty range begins on the line before it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


class _AnchoredMatcher(difflib.SequenceMatcher):
    """A ``SequenceMatcher`` that first pins the lines found once in each text, in the same order
    (the anchors of a patience diff, as ``git diff --patience``), and matches only the stretches
    between them. difflib's own matching looks for the longest common block over the whole
    remaining range at each step: on a file of 1,000 fixed classes, whose lines repeat from class
    to class, that took longer than all the fixing, and showed 13,000 changed lines where 5,000
    changed. The hunks can differ from difflib's where a moved line is unique (on small random
    edits of the fixtures, one diff in five differs, a line or two longer or shorter); each is a
    correct diff that ``git apply`` takes (tests/test_diff.py)."""

    def get_matching_blocks(self):
        if getattr(self, "_anchored_blocks", None) is None:
            self._anchored_blocks = _matching_blocks(self.a, self.b)
        return self._anchored_blocks


def _matching_blocks(a: list[str], b: list[str]) -> list:
    blocks = []
    previous_a = previous_b = 0
    for anchor_a, anchor_b in _anchors(a, b) + [(len(a), len(b))]:
        gap = difflib.SequenceMatcher(None, a[previous_a:anchor_a], b[previous_b:anchor_b])
        blocks.extend((i + previous_a, j + previous_b, size) for i, j, size in gap.get_matching_blocks() if size)
        if anchor_a < len(a):
            blocks.append((anchor_a, anchor_b, 1))
        previous_a, previous_b = anchor_a + 1, anchor_b + 1
    merged: list = []
    for i, j, size in blocks:  # adjacent blocks as one, as difflib gives them
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
        else:
            merged.append((i, j, size))
    return [difflib.Match(*block) for block in merged] + [difflib.Match(len(a), len(b), 0)]


def _anchors(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """(index in ``a``, index in ``b``) of each line found exactly once in each, the longest
    run of them in the same order in both (patience sorting)."""
    once_a = _found_once(a)
    once_b = _found_once(b)
    pairs = [(i, once_b[line]) for line, i in once_a.items() if line in once_b]
    pairs.sort()
    # Longest increasing subsequence of the b indexes: piles' tops, and each pair's predecessor.
    tops: list[int] = []  # b index at the top of each pile
    top_pair: list[int] = []  # index in ``pairs`` of each pile's top
    before: list[int] = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pile = bisect.bisect_left(tops, j)
        if pile:
            before[k] = top_pair[pile - 1]
        if pile == len(tops):
            tops.append(j)
            top_pair.append(k)
        else:
            tops[pile], top_pair[pile] = j, k
    chain = []
    k = top_pair[-1] if top_pair else -1
    while k >= 0:
        chain.append(pairs[k])
        k = before[k]
    return chain[::-1]


def _found_once(lines: list[str]) -> dict[str, int]:
    seen: dict[str, int] = {}
    repeated = set()
    for index, line in enumerate(lines):
        if line in seen:
            repeated.add(line)
        else:
            seen[line] = index
    return {line: index for line, index in seen.items() if line not in repeated}


def diff_names(path: str) -> tuple[str, str]:
    """The header names for ``path``: ``a/x/y.py`` and ``b/x/y.py`` for a path under the current
    directory, however it was spelt (``./x/y.py``, ``x//y.py``: git apply rejects a ``./``); a
    path outside it stays absolute, on both sides, as git prints a path it cannot make relative."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:  # another drive (Windows)
        return absolute, absolute
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return absolute, absolute
    relative = relative.replace(os.sep, "/")
    return f"a/{relative}", f"b/{relative}"
