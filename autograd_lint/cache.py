"""The content-hash cache: a second run over an unchanged tree does almost no work.

Three layers, each keyed by what its value depends on:
- a file's ``TextSummary`` and its project ``FileFacts``: the file's bytes (their hash);
- a file's lint result: its bytes, the project-wide facts (a fingerprint of ``ProjectFacts``:
  a change in another file that matters invalidates it) and the effective selection of codes;
- and, to avoid even reading unchanged files, path + size + mtime + inode -> the bytes' hash
  (the same trust ruff and make place in file metadata).
A run over exactly the same files (paths, and the same metadata for each), with the same
selection for each, returns the whole result of the last such run, kept in a small file of
its own (``RunMemo``): an unchanged tree then costs the walk and one small read.
Everything is stamped with the tool's version and the size and mtime of its own source files,
so an upgrade (or an edit of the linter itself) starts afresh. One pickle file per
cache directory; the directory holds a ``.gitignore`` of ``*`` so it never lands in a commit.
A cache that cannot be read or written is simply not used: linting never fails because of it.
"""

from __future__ import annotations

import os
import pickle
import sys
from dataclasses import dataclass, field

from autograd_lint import __version__
from autograd_lint.digest import blake2b

# `typing` for type checkers only: a warm run (the cache answers) imports this module, and
# `typing` would be a few percent of it (see selection.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

_FILE_NAME = "cache-v1.pickle"
_RUN_FILE_NAME = "runs-v1.pickle"
PROJECT_FILE_NAME = "projects-v1.pickle"
# The facts of a project's other files, for a run of a few of its files (engine.OthersFacts).
OTHERS_FILE_NAME = "others-v1.pickle"
_RUNS_KEPT = 4  # a few different runs over one tree (src/, tests/, the whole) each find theirs
# Entries kept per layer: enough for very large monorepos, bounded so the file cannot grow forever.
_MAX_ENTRIES = 200_000


def content_hash(data: bytes) -> str:
    return blake2b(data, digest_size=16).hexdigest()


@dataclass
class Cache:
    directory: str
    stats: dict[str, tuple[tuple[int, int, int], str]] = field(default_factory=dict)
    summaries: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    results: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    dirty: bool = False

    @classmethod
    def load(cls, directory: str) -> "Cache":
        cache = cls(directory)
        stored = _read(directory, _FILE_NAME)
        if stored is not None:
            cache.stats = stored.get("stats", {})
            cache.summaries = stored.get("summaries", {})
            cache.facts = stored.get("facts", {})
            cache.results = stored.get("results", {})
        return cache

    # --- file metadata -> content hash -----------------------------------------------------
    def known_hash(self, path: str, info: Optional[os.stat_result] = None) -> Optional[str]:
        """The content hash recorded for ``path`` if its metadata has not changed since.
        ``info``: the file's ``os.stat``, when the caller has it (discovery does)."""
        entry = self.stats.get(path)
        if entry is None:
            return None
        stamp = _stamp(path, info)
        return entry[1] if stamp is not None and stamp == entry[0] else None

    def remember_hash(self, path: str, digest: str, info: Optional[os.stat_result] = None) -> None:
        """``info``: the ``os.stat`` taken before the file was read, if any (then a change made
        while it was read shows as a changed stamp next time, never as an unchanged one)."""
        stamp = _stamp(path, info)
        if stamp is not None and self.stats.get(path) != (stamp, digest):
            self.stats[path] = (stamp, digest)
            self.dirty = True

    # --- the layers ------------------------------------------------------------------------
    def put(self, layer: dict, key, value) -> None:
        layer.pop(key, None)  # re-inserted last: the newest entries survive the size bound
        layer[key] = value
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        stored = {
            "version": _implementation_stamp(),
            "stats": _newest(self.stats),
            "summaries": _newest(self.summaries),
            "facts": _newest(self.facts),
            "results": _newest(self.results),
        }
        _write(self.directory, _FILE_NAME, stored)


@dataclass
class RunMemo:
    """The results of the last few runs, each keyed by everything a run's result depends on:
    its files in order, their metadata (the stamps the per-file layers trust) and the codes
    selected for each. Read before the per-file layers, which a hit never loads."""

    directory: str
    runs: dict[str, Any] = field(default_factory=dict)
    name: str = _RUN_FILE_NAME  # PROJECT_FILE_NAME: the facts of whole projects (engine.gather_project)

    @staticmethod
    def key(entries: list[tuple]) -> str:
        """``entries``: (path, stamp, selected codes) per file, and whatever else the results
        depend on."""
        # pickle, not repr: a project's ten thousand (path, stamp) entries take 5x less time, and
        # the same data pickles to the same bytes (the file is stamped with the Python version).
        return blake2b(pickle.dumps(entries, protocol=4), digest_size=16).hexdigest()

    @classmethod
    def load(cls, directory: str, name: str = _RUN_FILE_NAME) -> "RunMemo":
        memo = cls(directory, name=name)
        stored = _read(directory, name)
        if stored is not None:
            memo.runs = stored.get("runs", {})
        return memo

    def save(self, key: str, results: Any) -> None:
        self.runs.pop(key, None)
        self.runs[key] = results
        while len(self.runs) > _RUNS_KEPT:
            del self.runs[next(iter(self.runs))]  # the oldest
        _write(self.directory, self.name, {"version": _implementation_stamp(), "runs": self.runs})


def _read(directory: str, name: str) -> Optional[dict]:
    """The stored dict, if the file is there, readable and written by this very implementation."""
    try:
        with open(os.path.join(directory, name), "rb") as handle:
            stored = pickle.load(handle)
    except (OSError, EOFError, pickle.PickleError, AttributeError, ImportError, ValueError, TypeError):
        return None
    if isinstance(stored, dict) and stored.get("version") == _implementation_stamp():
        return stored
    return None


def _write(directory: str, name: str, stored: dict) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
        gitignore = os.path.join(directory, ".gitignore")
        if not os.path.exists(gitignore):
            with open(gitignore, "w", encoding="utf-8") as handle:
                handle.write("# Created by autograd-lint.\n*\n")
        # Write then rename: a crash or a parallel run never leaves half a cache file.
        import tempfile  # here: a run that writes nothing does not load it

        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".cache-")
        with os.fdopen(handle, "wb") as out:
            pickle.dump(stored, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, os.path.join(directory, name))
    except OSError:
        pass  # a read-only tree: run without a cache


def stamp(path: str, info: Optional[os.stat_result] = None) -> Optional[tuple[int, int, int]]:
    """What the cache trusts to say a file is unchanged: its size, mtime and inode."""
    return _stamp(path, info)


def _stamp(path: str, info: Optional[os.stat_result] = None) -> Optional[tuple[int, int, int]]:
    if info is None:
        try:
            info = os.stat(path)
        except OSError:
            return None
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def _newest(layer: dict) -> dict:
    """The last ``_MAX_ENTRIES`` entries (dicts keep insertion order: the oldest go first)."""
    if len(layer) <= _MAX_ENTRIES:
        return layer
    keys = list(layer)[-_MAX_ENTRIES:]
    return {k: layer[k] for k in keys}


_STAMP: Optional[str] = None


def _implementation_stamp() -> str:
    global _STAMP
    if _STAMP is None:
        package = os.path.dirname(os.path.abspath(__file__))
        # The Python version too: what parses (and so what is reported) depends on it.
        parts = [__version__, sys.version]
        for directory, _, names in sorted(os.walk(package)):
            for name in sorted(names):
                if name.endswith(".py"):
                    info = os.stat(os.path.join(directory, name))
                    parts.append(f"{name}:{info.st_size}:{info.st_mtime_ns}")
        _STAMP = blake2b("|".join(parts).encode(), digest_size=16).hexdigest()
    return _STAMP
