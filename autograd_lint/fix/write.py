"""Getting a fixed text onto disk (atomically) or onto the screen (as a unified diff)."""

from __future__ import annotations

import os
import stat

from autograd_lint.analysis.syntax import source_lines


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
    import difflib  # here: only --diff needs it

    old_name, new_name = diff_names(path)
    lines = []
    for line in difflib.unified_diff(source_lines(before), source_lines(after),
                                     fromfile=old_name, tofile=new_name):
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return "".join(lines)


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
