"""Reading one Python source file into text, or saying in plain words why it cannot be read.

Every failure becomes a ``SourceError`` whose message ends up, verbatim, in an AGL000 finding
(``path:1:1: AGL000 <message>``), so the messages are written for the person reading that line.
Nothing here raises anything else for bad input: permission problems, directories, broken links,
FIFOs, binary data, oversized files and undecodable bytes are all SourceErrors.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import stat

TYPE_CHECKING = False  # `typing` for type checkers only (the CLI imports this module on every run)
if TYPE_CHECKING:
    from typing import Optional

# Hand-written modules stay far below this; the files above it are generated tables or vendored
# blobs, where a parse would cost seconds and no Function class is expected. 5 MiB still admits
# the largest hand-written modules in PyTorch itself (~1 MiB). Sizes are said in MiB everywhere
# (1 MiB = 1,048,576 bytes), the unit of the limit itself.
DEFAULT_MAX_FILE_SIZE = 5 * 1024 * 1024


class SourceError(Exception):
    """A file that cannot be linted; ``message`` is meant for the user, without the path."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def is_binary(data: bytes) -> bool:
    """True for data no Python source can contain (CPython refuses source with NUL bytes)."""
    return b"\0" in data


def format_size(n_bytes: int) -> str:
    if n_bytes >= 1024 * 1024:
        return f"{n_bytes / (1024 * 1024):.1f} MiB"
    if n_bytes >= 1024:
        return f"{n_bytes / 1024:.1f} KiB"
    return f"{n_bytes} byte{'' if n_bytes == 1 else 's'}"


def too_large_message(size: int, max_bytes: int) -> str:
    return (
        f"file is {format_size(size)}, over the {format_size(max_bytes)} limit; "
        "raise it with --max-file-size or max-file-size in [tool.autograd-lint]"
    )


def read_source(path: str, max_bytes: Optional[int] = DEFAULT_MAX_FILE_SIZE) -> str:
    """Return the decoded text of ``path``; ``max_bytes=None`` means no size limit.

    The encoding is found the way Python finds it (PEP 263 coding cookie, UTF-8 BOM, else
    UTF-8), so a file Python can import is a file we can read.
    """
    return text_of(read_bytes(path, max_bytes))


def text_of(data: bytes) -> str:
    """Decode a file's bytes as Python source; SourceError for binary or undecodable data."""
    if is_binary(data):
        raise SourceError("binary file (contains NUL bytes), not Python source")
    return decode_source(data)


def read_bytes(path: str, max_bytes: Optional[int]) -> bytes:
    """The file's bytes; SourceError when it cannot (or must not) be read."""
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise SourceError("is a directory, not a file")
        # Opening a FIFO or a device could block forever or never end.
        if not stat.S_ISREG(info.st_mode):
            raise SourceError("not a regular file (a FIFO, socket or device)")
        if max_bytes is not None and info.st_size > max_bytes:
            raise SourceError(too_large_message(info.st_size, max_bytes))
        with open(path, "rb") as handle:
            # Read one byte past the limit: the file may have grown since the stat.
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    except FileNotFoundError:
        if os.path.islink(path):
            raise SourceError(f"broken symbolic link (points to {os.readlink(path)!r})") from None
        raise SourceError("file not found (deleted while linting?)") from None
    except PermissionError:
        raise SourceError("permission denied") from None
    except IsADirectoryError:
        raise SourceError("is a directory, not a file") from None
    except OSError as error:
        raise SourceError(f"could not read: {error.strerror or error}") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise SourceError(too_large_message(len(data), max_bytes))
    return data


def decode_source(data: bytes) -> str:
    """Decode source bytes as Python does: BOM, then PEP 263 cookie, then UTF-8."""
    encoding, origin = _detect_encoding(data)
    if encoding == "utf-8" and data.isascii():
        # ASCII is UTF-8 and Latin-1 alike, and Latin-1's decoder is a plain copy: 3x faster
        # than the UTF-8 decoder's checks (two thirds of torch's 46 MB are ASCII-only files).
        return data.decode("latin-1")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise SourceError(
            f"could not decode as {origin}: {error.reason} "
            f"(byte {error.object[error.start:error.start + 1]!r}) at line {line}, column {column}"
        ) from None
    except LookupError as error:  # a cookie naming a codec that is not a text encoding (rot13)
        raise SourceError(f"bad encoding declaration: {error}") from None


_NO_COOKIE = "utf-8 (no PEP 263 coding cookie, so Python reads it as utf-8)"


def _detect_encoding(data: bytes) -> tuple[str, str]:
    """The codec Python would use, and how it was chosen (for the error message)."""
    if not data.startswith(codecs.BOM_UTF8) and b"coding" not in _first_two_lines(data):
        return "utf-8", _NO_COOKIE  # nearly every file: no BOM, no cookie, no need for tokenize
    import tokenize  # here: most runs read no file with a cookie (the CLI imports this module)

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        # tokenize gives up early when line 1 or 2 is not UTF-8 and declares nothing; decoding
        # as UTF-8 then fails too, with the line and column the user needs.
        if "invalid or missing encoding declaration" in str(error.msg):
            return "utf-8", _NO_COOKIE
        # An unknown codec in the cookie, or a cookie that contradicts the BOM.
        raise SourceError(f"bad encoding declaration: {error.msg}") from None
    if encoding == "utf-8-sig":
        return encoding, "utf-8 (the file starts with a UTF-8 BOM)"
    if _has_cookie(data):
        return encoding, f"{encoding} (declared by PEP 263 coding cookie)"
    return encoding, _NO_COOKIE


# The PEP 263 pattern, as tokenize uses it; the cookie may only sit on line 1 or 2.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")


def _has_cookie(data: bytes) -> bool:
    return any(_COOKIE.match(line) for line in _first_two_lines(data).splitlines()[:2])


def _first_two_lines(data: bytes) -> bytes:
    """At least the first two lines (a line may end in "\r" alone: then more)."""
    end = data.find(b"\n", data.find(b"\n") + 1)
    return data if end < 0 else data[:end]


# A line as Python numbers them: "\n", "\r\n" or "\r" ends it, nothing else.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str) -> list[str]:
    """The lines of a module as Python numbers them (ends kept). Not ``str.splitlines``: that
    also breaks at form feeds, ``\x1c``-``\x1e`` and ``\u2028``, which Python allows inside
    comments and strings, and line numbers would drift from the parser's. Without a carriage
    return, ``str.split`` at "\n" gives the same lines, 3x faster than the regex (torch: 0.16
    against 0.47 s for all its files)."""
    if "\r" in text:
        return _LINE.findall(text)
    lines = text.split("\n")
    last = lines.pop()  # after the final "\n" (empty), or a last line without one
    lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines
