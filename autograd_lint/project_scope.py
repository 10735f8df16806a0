"""The project of a file: the files whose facts judge it, whichever front lints it.

A run of the CLI on a few files, the pre-commit hook (the CLI on the staged files) and the flake8
plugin (one file, or an editor's unsaved buffer) all judge a file with the facts of its whole
project (``analysis.project.ProjectFacts``: Function base classes in other modules, ``.apply``
calls, gradcheck calls in tests), so they agree with a run over the whole project.

The project's root, for a file:
1. the directory of the nearest ``pyproject.toml`` with ``[tool.autograd-lint]`` (the file the
   CLI reads its settings from); below it, the deepest directory that one of its
   ``subprojects`` patterns names, when the file lies in one (a monorepo's independent packages;
   this repository's fixtures, each directory a project of its own);
2. else the root of the git repository holding the file (the nearest directory with ``.git``);
3. else the outermost package holding it (the top of its ``__init__.py`` chain: an installed
   library);
4. else none: the files given are their own project (as before project facts were gathered).
The project's files are the ``.py`` files under the root, with the excludes of the settings
(the defaults skip ``.git``, virtual environments, build output), minus its subprojects.
"""

from __future__ import annotations

import fnmatch
import os
from functools import lru_cache

from autograd_lint.config import Config
from autograd_lint.discovery import Discovered, discover

# `typing` for type checkers only: a warm run (the cache answers) imports this module, and
# `typing` would be a few percent of it (see selection.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def project_root(path: str, config: Config) -> Optional[str]:
    """The absolute root of the project holding ``path`` (a file or a directory); None when it
    belongs to none."""
    return settled_root(path, config) or package_root(path)


def settled_root(path: str, config: Config) -> Optional[str]:
    """The root of the project by the rules 1 and 2 (settings, repository), else None."""
    absolute = os.path.abspath(path)
    directory = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
    return _root_of(directory, str(config.root) if config.path is not None else None, config.subprojects)


def settled_roots_of_directories(directories: list[str], config: Config) -> dict[str, Optional[str]]:
    """``settled_root`` of each of ``directories`` (the directories of files to lint, which
    need no ``isdir`` call)."""
    config_root = str(config.root) if config.path is not None else None
    return {d: _root_of(os.path.abspath(d), config_root, config.subprojects) for d in directories}


def package_roots_of_directories(directories: list[str]) -> dict[str, Optional[str]]:
    """``package_root`` of each of ``directories`` (as ``settled_roots_of_directories``)."""
    return {d: _outermost_package(os.path.abspath(d)) for d in directories}


def package_root(path: str) -> Optional[str]:
    """Rule 3: the outermost package holding ``path``. The CLI joins the files it is given that
    only this rule places (or none does) into one project, with these packages' files: given a
    directory that holds a package and plain modules, they are judged together, as always."""
    absolute = os.path.abspath(path)
    return _outermost_package(absolute if os.path.isdir(absolute) else os.path.dirname(absolute))


@lru_cache(maxsize=1024)
def _root_of(directory: str, config_root: Optional[str], subprojects: tuple[str, ...]) -> Optional[str]:
    if config_root is not None:
        relative = os.path.relpath(directory, config_root)
        if relative != os.curdir and not relative.startswith(os.pardir):
            parts = relative.replace(os.sep, "/").split("/")
            for depth in range(len(parts), 0, -1):  # the deepest subproject holding it
                prefix = "/".join(parts[:depth])
                # One pattern component per directory: "*" never spans a "/".
                if any(pattern.count("/") == depth - 1 and fnmatch.fnmatchcase(prefix, pattern)
                       for pattern in subprojects):
                    return os.path.join(config_root, *parts[:depth])
        return config_root
    return _repository_root(directory)


@lru_cache(maxsize=4096)
def _repository_root(directory: str) -> Optional[str]:
    """The nearest directory holding ``.git``, from ``directory`` up (each directory asked once
    per run: a tree's directories share their parents)."""
    if os.path.exists(os.path.join(directory, ".git")):
        return directory
    parent = os.path.dirname(directory)
    return None if parent == directory else _repository_root(parent)


@lru_cache(maxsize=4096)
def _outermost_package(directory: str) -> Optional[str]:
    if not os.path.isfile(os.path.join(directory, "__init__.py")):
        return None
    parent = os.path.dirname(directory)
    return directory if parent == directory else (_outermost_package(parent) or directory)


def project_files(root: str, config: Config, spec) -> Discovered:
    """The project's ``.py`` files under ``root``, as discovery finds them with the exclude
    patterns ``spec``, minus those of its subprojects (and of the subprojects' own roots)."""
    found = discover([root], spec, str(config.root))
    config_root = str(config.root) if config.path is not None else None
    if config_root is None or not config.subprojects:
        return found
    kept = [path for path in found.files
            if _root_of(os.path.dirname(os.path.abspath(path)), config_root, config.subprojects) == root]
    return Discovered(kept, {path: found.stats[path] for path in kept if path in found.stats}, found.warnings)
