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

import fnmatch
import os
import re
from collections.abc import Iterator, Sequence

# Typical names of virtual environments, caches and build output. Deliberately not
# site-packages: linting an installed library on purpose is a use case.
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn",
    ".venv", "venv", "env", ".env",
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".autograd_lint_cache",
    "build", "dist", ".eggs", "*.egg-info",
    ".tox", ".nox", "node_modules",
)


class Discovered:
    # A plain class, not a dataclass: every run of the CLI imports this module (see selection.py).
    def __init__(self, files: list[str] | None = None, stats: dict[str, os.stat_result] | None = None,
                 warnings: list[str] | None = None) -> None:
        self.files = [] if files is None else files
        # path -> its os.stat, taken while finding it (the cache's stamp: no second stat per file)
        self.stats = {} if stats is None else stats
        # Directories that could not be listed (permission denied, ...): reported, not fatal.
        self.warnings = [] if warnings is None else warnings


def missing_paths(paths: Sequence[str]) -> list[str]:
    # lexists: a broken symlink named on the command line is linted (and reported as such).
    return [path for path in paths if not os.path.lexists(path)]


def exclude_spec(exclude: Sequence[str] | None, extend_exclude: Sequence[str] = ()) -> "Excludes":
    patterns = DEFAULT_EXCLUDE if exclude is None else exclude
    return Excludes([*patterns, *extend_exclude])


# A pattern that is a plain name, maybe with `*` (the defaults, `*.egg-info`): it matches an entry
# by its own name at any depth, so a walk that never enters an excluded directory only needs to
# look at each entry's name. Anything else (a "/", "!", "?", "[", "**", a comment) goes to pathspec.
_PLAIN_NAME = re.compile(r"[\w.*-]+")


class Excludes:
    """gitignore-style exclude patterns, matched by ``pathspec``; when every pattern is a plain
    name (the default list), by name alone, without loading pathspec (matching 3,000 paths
    against 19 patterns one by one took a third of a cached run over torch)."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = list(patterns)
        plain = all(_PLAIN_NAME.fullmatch(p) and "**" not in p for p in self.patterns)
        self._names: tuple[frozenset[str], re.Pattern[str] | None] | None = None
        if plain:
            wildcards = [fnmatch.translate(p) for p in self.patterns if "*" in p]
            self._names = (frozenset(p for p in self.patterns if "*" not in p),
                           re.compile("|".join(wildcards)) if wildcards else None)
        self._spec = None

    def name_matches(self, name: str, is_dir: bool) -> bool:
        """Is an entry called ``name``, whose parent directories are not excluded, excluded?"""
        if self._names is None:
            raise ValueError("only for plain-name patterns: use match_file")
        exact, wildcard = self._names
        return name in exact or (wildcard is not None and wildcard.match(name) is not None)

    @property
    def by_name(self) -> bool:
        return self._names is not None

    def match_file(self, relative: str) -> bool:
        """``relative``: "/"-separated, from the root, ending in "/" for a directory."""
        if self._names is not None:
            parts = relative.rstrip("/").split("/")
            return any(self.name_matches(part, True) for part in parts if part)
        if self._spec is None:
            import pathspec

            self._spec = pathspec.GitIgnoreSpec.from_lines(self.patterns)
        return self._spec.match_file(relative)


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
        stat, files, stats = os.stat, found.files, found.stats  # locals: 10,000 files walk in this loop
        for candidate in candidates:
            try:
                info = stat(candidate)
            except OSError:
                identity: object = candidate  # a broken link or an unreadable path: reported as named
            else:
                identity = (info.st_dev, info.st_ino)  # the same for every path (or link) to the file
            if identity not in seen:
                seen.add(identity)
                files.append(candidate)
                if identity is not candidate:
                    stats[candidate] = info
    return found


def _walk(top: str, spec, root: str, warnings: list[str]) -> Iterator[str]:
    """The ``.py`` files under ``top``: each directory's files (sorted), then its
    subdirectories' (sorted), as ``os.walk`` top-down gives them. ``os.scandir`` directly: the
    type of each entry comes with the listing, and a walk of torch (640 directories) took a
    third less time than through ``os.walk``."""
    top_relative = relative_to_root(top, root)
    if _is_excluded(spec, top_relative, is_dir=True):
        top_relative = ""  # explicitly named, though excluded: match below it only
    pending = [(top, top_relative)]  # (directory, its path from the root for the patterns)
    by_name = spec.by_name
    while pending:
        directory, relative = pending.pop()
        # Only the .py files and the subdirectories are sorted, not the whole listing: torch's
        # include/ directories hold thousands of headers, most of a walk's entries.
        files: list[tuple[str, str]] = []
        subdirectories: list[tuple[str, str]] = []
        try:
            with os.scandir(directory) as listing:
                for entry in listing:
                    name = entry.name
                    try:
                        is_dir = entry.is_dir()  # a link to a directory counts as one, but is not entered
                    except OSError:
                        is_dir = False
                    if is_dir:
                        subdirectories.append((name, entry))
                    elif name.endswith(".py"):
                        files.append((name, entry.path))
        except OSError as error:
            warnings.append(f"cannot list directory {error.filename}: {error.strerror}")
            continue
        prefix = relative + "/" if relative else ""
        files.sort()
        for name, path in files:
            if not (spec.name_matches(name, False) if by_name else _is_excluded(spec, prefix + name, False)):
                yield path
        subdirectories.sort(key=_first)
        entered = []
        for name, entry in subdirectories:
            excluded = spec.name_matches(name, True) if by_name else _is_excluded(spec, prefix + name, True)
            if not excluded and not entry.is_symlink():
                entered.append((entry.path, prefix + name))
        pending.extend(reversed(entered))  # popped in sorted order


def _first(pair: tuple) -> str:
    return pair[0]


def excluded_by_name(spec, path: str, root: str) -> bool:
    """Do the excludes skip the file ``path`` when it is named (``--force-exclude``)?"""
    return _is_excluded(spec, relative_to_root(path, root), False)


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
