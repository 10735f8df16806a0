"""Files that are not nice Python: each gets a clear message (AGL000), none crashes the run."""

from __future__ import annotations

import os
import sys

import pytest

from autograd_lint import source
from autograd_lint.source import SourceError, decode_source, is_binary, read_source
from conftest import assert_no_traceback, write
from test_cli import json_report, linted_paths

RUNNING_AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_symlinks = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")


def error_of(path, **kwargs) -> str:
    with pytest.raises(SourceError) as error:
        read_source(str(path), **kwargs)
    return error.value.message


# --- read_source (unit) ----------------------------------------------------------------------------

def test_plain_and_empty_files(tmp_path):
    assert read_source(str(write(tmp_path / "a.py", "x = 'é'\n"))) == "x = 'é'\n"
    assert read_source(str(write(tmp_path / "empty.py", b""))) == ""


def test_utf8_bom_is_accepted_and_stripped(tmp_path):
    path = write(tmp_path / "bom.py", b"\xef\xbb\xbfx = 1\n")
    assert read_source(str(path)) == "x = 1\n"


def test_pep263_latin1_cookie_decodes(tmp_path):
    path = write(tmp_path / "latin.py", "# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1"))
    assert read_source(str(path)) == "# -*- coding: latin-1 -*-\nname = 'café'\n"


def test_non_utf8_without_cookie_says_where_and_why(tmp_path):
    path = write(tmp_path / "latin.py", "x = 1\nname = 'café'\n".encode("latin-1"))
    message = error_of(path)
    assert message.startswith("could not decode as utf-8 (no PEP 263 coding cookie")
    assert "at line 2, column 12" in message


def test_non_utf8_on_the_first_line(tmp_path):
    # tokenize.detect_encoding itself fails here ("invalid or missing encoding declaration").
    path = write(tmp_path / "latin.py", "name = 'café'\n".encode("latin-1"))
    assert error_of(path).startswith("could not decode as utf-8 (no PEP 263 coding cookie")
    assert "at line 1, column 12" in error_of(path)


def test_bytes_that_contradict_the_cookie(tmp_path):
    path = write(tmp_path / "lying.py", "# coding: utf-8\nname = 'café'\n".encode("latin-1"))
    assert error_of(path).startswith("could not decode as utf-8 (declared by PEP 263 coding cookie)")


def test_bad_encoding_declarations(tmp_path):
    unknown = write(tmp_path / "unknown.py", b"# coding: klingon\nx = 1\n")
    assert error_of(unknown).startswith("bad encoding declaration: unknown encoding")
    not_text = write(tmp_path / "rot.py", b"# coding: rot13\nx = 1\n")
    assert error_of(not_text).startswith("bad encoding declaration:")
    bom_and_latin = write(tmp_path / "both.py", b"\xef\xbb\xbf# coding: latin-1\nx = 1\n")
    assert error_of(bom_and_latin).startswith("bad encoding declaration:")


def test_binary_file(tmp_path):
    assert is_binary(b"\x7fELF\x00\x01") and not is_binary(b"x = 1\n")
    path = write(tmp_path / "blob.py", b"\x7fELF\x02\x01\x01\x00\x00")
    assert error_of(path) == "binary file (contains NUL bytes), not Python source"


def test_file_over_the_size_limit(tmp_path):
    path = write(tmp_path / "big.py", "x = 1\n" * 1000)
    assert error_of(path, max_bytes=100) == (
        "file is 5.9 KiB, over the 100 bytes limit; raise it with --max-file-size "
        "or max-file-size in [tool.autograd-lint]")
    assert read_source(str(path), max_bytes=None).count("\n") == 1000


def test_default_size_limit_is_5_mb(tmp_path):
    assert source.DEFAULT_MAX_FILE_SIZE == 5 * 1024 * 1024
    huge = tmp_path / "huge.py"
    with open(huge, "wb") as handle:  # sparse: no 6 MB actually written
        handle.truncate(6 * 1024 * 1024)
    assert error_of(huge).startswith("file is 6.0 MiB, over the 5.0 MiB limit")


def test_directory_missing_file_and_broken_symlink(tmp_path):
    assert error_of(tmp_path) == "is a directory, not a file"
    assert error_of(tmp_path / "gone.py").startswith("file not found")
    if sys.platform != "win32":
        os.symlink("nowhere.py", tmp_path / "broken.py")
        assert error_of(tmp_path / "broken.py") == "broken symbolic link (points to 'nowhere.py')"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    assert error_of(tmp_path / "pipe.py") == "not a regular file (a FIFO, socket or device)"


def test_permission_denied_message(tmp_path, monkeypatch):
    path = write(tmp_path / "secret.py")

    def deny(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(source, "open", deny, raising=False)
    assert error_of(path) == "permission denied"


@pytest.mark.skipif(RUNNING_AS_ROOT, reason="root can read a chmod 000 file")
def test_unreadable_file_really_unreadable(tmp_path):
    path = write(tmp_path / "secret.py")
    path.chmod(0)
    try:
        assert error_of(path) == "permission denied"
    finally:
        path.chmod(0o644)


def test_decode_source_matches_python(tmp_path):
    text = "# vim: set fileencoding=cp1252 :\ns = '€'\n"
    assert decode_source(text.encode("cp1252")) == text


@pytest.mark.parametrize("data, encoding", [
    (b"x = 1\r\ny = '\\x7f'\n", "utf-8"),  # ASCII only: Latin-1's decoder, the same text
    ("x = 'é'\n".encode(), "utf-8"),
    (b"# coding: ascii\nx = 1\n", "ascii"),
])
def test_ascii_fast_path_gives_the_text_python_reads(data, encoding):
    assert decode_source(data) == data.decode(encoding)


def test_ascii_bytes_under_a_utf16_cookie_are_still_refused():
    """The fast path is for files without a cookie: ASCII bytes are not valid UTF-16 (Python
    refuses to compile them too)."""
    with pytest.raises(SourceError, match="utf-16"):
        decode_source(b"# -*- coding: utf-16 -*-\nx = 1\n")


# --- the CLI on bad files: never a traceback, never a stop ----------------------------------------

BAD_FILES = {
    "binary.py": b"\x00\x01\x02",
    "latin_no_cookie.py": "name = 'café'\n".encode("latin-1"),
    "latin_cookie.py": "# coding: latin-1\nname = 'café'\n".encode("latin-1"),
    "unknown_cookie.py": b"# coding: klingon\n",
    "empty.py": b"",
    "bom.py": b"\xef\xbb\xbfx = 1\n",
    # The engine's text pre-check skips files that cannot hold a Function class, so a syntax
    # error is only found (and reported) in one that might.
    "syntax.py": b"import torch\nclass F(torch.autograd.Function):\n    def (:\n",
}


def test_bad_files_do_not_stop_the_run(cli, tmp_path):
    for name, content in BAD_FILES.items():
        write(tmp_path / "d" / name, content)
    write(tmp_path / "d" / "zz_ok.py")
    result = cli("--format", "json", "d")
    assert_no_traceback(result)
    assert result.returncode in (0, 1), result.stderr
    assert json_report(result)["summary"]["files"] == len(BAD_FILES) + 1


@pytest.mark.needs_engine
def test_bad_files_are_reported_as_agl000(cli, tmp_path):
    for name, content in BAD_FILES.items():
        write(tmp_path / name, content)
    report = json_report(cli("--format", "json", "--select", "AGL000", "."))
    messages = {f["path"]: f["message"] for f in report["findings"]}
    assert set(messages) == {"./binary.py", "./latin_no_cookie.py", "./unknown_cookie.py", "./syntax.py"}
    assert messages["./binary.py"].startswith("binary file")
    assert messages["./latin_no_cookie.py"].startswith("could not decode as utf-8")
    # A file that cannot be read is reported at 1:1; a syntax error where Python places it.
    assert all(f["line"] == 1 and f["column"] == 1 for f in report["findings"] if f["path"] != "./syntax.py")


def test_huge_file_is_reported_without_being_read(cli, tmp_path):
    huge = tmp_path / "huge.py"
    with open(huge, "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse; reading it would be slow and pointless
    result = cli("huge.py")
    assert_no_traceback(result)
    assert result.returncode == 1
    assert result.stdout.startswith("huge.py:1:1: AGL000 file is 64.0 MiB, over the 5.0 MiB limit")


@pytest.mark.skipif(RUNNING_AS_ROOT, reason="root can read a chmod 000 file")
def test_unreadable_file_and_directory_in_the_cli(cli, tmp_path):
    write(tmp_path / "secret.py").chmod(0)
    locked = tmp_path / "locked"
    write(locked / "inside.py")
    locked.chmod(0)
    try:
        result = cli(".")
        assert_no_traceback(result)
        assert result.returncode in (0, 1)
        assert "warning: cannot list directory ./locked: Permission denied" in result.stderr
    finally:
        locked.chmod(0o755)
        (tmp_path / "secret.py").chmod(0o644)


@needs_symlinks
def test_symlinked_file_is_linted_once(tmp_path):
    write(tmp_path / "pkg" / "real.py")
    os.symlink("real.py", tmp_path / "pkg" / "alias.py")
    write(tmp_path / "outside" / "target.py")
    os.symlink(tmp_path / "outside" / "target.py", tmp_path / "pkg" / "link_out.py")
    # alias.py sorts first and stands for real.py; a link to a file elsewhere is linted.
    assert linted_paths(tmp_path, "pkg") == ["pkg/alias.py", "pkg/link_out.py"]
    assert linted_paths(tmp_path, "pkg/real.py", "pkg") == ["pkg/real.py", "pkg/link_out.py"]


@needs_symlinks
def test_symlink_loop_and_symlinked_directories_are_not_followed(tmp_path):
    write(tmp_path / "d" / "a.py")
    os.symlink(tmp_path / "d", tmp_path / "d" / "loop")
    os.symlink(".", tmp_path / "d" / "self")
    assert linted_paths(tmp_path, "d") == ["d/a.py"]
    # A symlinked directory named on the command line is walked.
    os.symlink(tmp_path / "d", tmp_path / "alias_dir")
    assert linted_paths(tmp_path, "alias_dir") == ["alias_dir/a.py"]


@needs_symlinks
def test_broken_symlink_does_not_crash(cli, tmp_path):
    os.symlink("nowhere.py", tmp_path / "broken.py")
    for args in (["broken.py"], ["."]):
        result = cli(*args)
        assert_no_traceback(result)
        assert result.returncode in (0, 1), result.stderr


@pytest.mark.parametrize("text", ["", "a", "a\n", "a\nb", "\n\n", "a\n\n", "a\r\nb\rc\n", "a\rb", "\r\n",
                                  "x\x0cy\n\u2028z\x1c\n", "# \x85 comment\nb = 1"])
def test_source_lines_number_lines_as_python_does(text):
    # Only "\n", "\r\n" and "\r" end a line (form feeds, \x1c and \u2028 do not, unlike
    # str.splitlines); the fast path without "\r" gives what the regex gives.
    assert source.source_lines(text) == source._LINE.findall(text)
    assert "".join(source.source_lines(text)) == text
