"""Turning the PATHs of the command line into the list of files to lint.

- A file named on the command line is linted whatever its name or the excludes, unless
  ``force_exclude`` (``--force-exclude``, as ruff's): then the excludes apply to it too. Tools
  that pass every changed file by name (pre-commit, editors, ``git diff --name-only | xargs``)
  need it for the project's excludes to mean anything.
- A directory is walked for ``*.py`` files, in sorted order, skipping excluded entries.
- Excludes are gitignore-style patterns (``pathspec``) relative to the project root (the
  directory of the config file, else the current directory); a pattern without "/" matches a
  name at any depth. ``exclude`` replaces ``DEFAULT_EXCLUDE``, ``extend-exclude`` adds to it.
- A directory named on the command line is walked even if it is itself excluded (the user asked
  for it: ``autograd-lint .venv/lib/python3.11/site-packages/torch``); its contents are then
  matched relative to it.
- Symbolic links to directories are not followed (no loops, no walking out of the tree);
  symbolic links to files are linted, and every file is linted once however many paths reach it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

# Typical names of virtual environments, caches and build output. Deliberately not
# site-packages: linting an installed library on purpose is a use case.
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn",
    ".venv", "venv", "env", ".env",
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".autograd_lint_cache",
    "build", "dist", ".eggs", "*.egg-info",
    ".tox", ".nox", "node_modules",
)


@dataclass
class Discovered:
    files: list[str] = field(default_factory=list)
    # Directories that could not be listed (permission denied, ...): reported, not fatal.
    warnings: list[str] = field(default_factory=list)


def missing_paths(paths: Sequence[str]) -> list[str]:
    # lexists: a broken symlink named on the command line is linted (and reported as such).
    return [path for path in paths if not os.path.lexists(path)]


def exclude_spec(exclude: Optional[Sequence[str]], extend_exclude: Sequence[str] = ()):
    import pathspec

    patterns = DEFAULT_EXCLUDE if exclude is None else exclude
    return pathspec.GitIgnoreSpec.from_lines([*patterns, *extend_exclude])


def discover(paths: Sequence[str], spec, root: str, force_exclude: bool = False) -> Discovered:
    """The files to lint, in command-line order, each directory's files sorted.

    Check ``missing_paths`` first: a path that does not exist is taken for a file here.
    """
    found = Discovered()
    seen: set[object] = set()
    root = os.path.abspath(root)
    for path in paths:
        if force_exclude and _is_excluded(spec, relative_to_root(path, root), os.path.isdir(path)):
            continue
        if os.path.isdir(path):
            candidates: Iterator[str] = _walk(path, spec, root, found.warnings)
        else:
            candidates = iter([path])
        for candidate in candidates:
            identity = _identity(candidate)
            if identity not in seen:
                seen.add(identity)
                found.files.append(candidate)
    return found


def _identity(path: str) -> object:
    """The same for every path that reaches one file (links included): its device and inode."""
    try:
        info = os.stat(path)
    except OSError:
        return path  # a broken link or an unreadable path: the engine reports it as named
    return (info.st_dev, info.st_ino)


def _walk(top: str, spec, root: str, warnings: list[str]) -> Iterator[str]:
    top_relative = relative_to_root(top, root)
    if _is_excluded(spec, top_relative, is_dir=True):
        top_relative = ""  # explicitly named, though excluded: match below it only

    def report(error: OSError) -> None:
        warnings.append(f"cannot list directory {error.filename}: {error.strerror}")

    # followlinks=False: a symlinked directory is listed but never entered.
    for dirpath, dirnames, filenames in os.walk(top, onerror=report, followlinks=False):
        # Relative paths are built by joining names, not recomputed per entry (large trees).
        below_top = os.path.relpath(dirpath, top).replace(os.sep, "/")
        prefix = "".join(part + "/" for part in (top_relative, below_top) if part not in ("", "."))
        dirnames[:] = sorted(name for name in dirnames if not _is_excluded(spec, prefix + name, True))
        for name in sorted(filenames):
            if name.endswith(".py") and not _is_excluded(spec, prefix + name, False):
                yield os.path.join(dirpath, name)


def _is_excluded(spec, relative: str, is_dir: bool) -> bool:
    if relative in ("", "."):
        return False
    return spec.match_file(relative + "/" if is_dir else relative)


def relative_to_root(path: str, root: str) -> str:
    """``path`` relative to ``root``, "/"-separated, for matching gitignore-style patterns.

    A path outside ``root`` keeps its own components (without a leading "/" or drive), so
    patterns without "/" (``build``, ``test_*.py``) still match it by name.
    """
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, root)
    except ValueError:  # another drive on Windows
        relative = os.pardir
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        relative = os.path.splitdrive(absolute)[1].lstrip(os.sep)
    return relative.replace(os.sep, "/")
