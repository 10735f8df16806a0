"""The flake8 plugin: the CLI's analysis, one file at a time (with its project's facts), for
editors and flake8 users.

Registered as the ``flake8.extension`` entry point ``AGL`` (pyproject.toml), so installing the
package is all it takes; flake8 then prints our findings like its own, and applies its own
``# noqa``, ``--select``/``--extend-ignore``, ``--per-file-ignores`` and ``-j`` to them.

What the plugin decides itself:

- **Which rules run**: the defaults, adjusted by ``[tool.autograd-lint]`` (``select``,
  ``extend-select``, ``ignore``, ``extend-ignore``, ``per-file-ignores``) of the nearest
  ``pyproject.toml`` above the file, so editor and CLI agree. The opt-in rules (AGL207, AGL305,
  AGL502) also run when flake8's ``--select``/``--extend-select`` names them in full: flake8
  shows every AGL code by default, so a prefix must not switch them on (as in the CLI).
- **Columns**: flake8 adds 1 to the column a plugin yields; ours are 1-based already.
- **Files Python cannot decode**: flake8 falls back to Latin-1 and would lint them; Python
  refuses them, so the plugin reports the CLI's AGL000 instead (``_undecodable``).
- **Cost**: a file that names neither Function nor gradcheck costs two substring searches,
  and, in a project that has Function classes (it could subclass one), the text pre-check.
  The analysis (and libcst) is imported only when a file may matter, so a flake8 run over code
  without Function classes - every run of an editor on such a file - never loads it.
- **The project's facts**: flake8 hands a plugin one file at a time, but each file is judged
  with the facts of its whole project (``project_scope``: the settings' directory, else the
  git repository, else the outermost package): Function base classes and the methods they
  define in other modules, ``.apply`` calls, gradcheck calls in tests. They are gathered once
  per process (``engine.gather_project``), from the CLI's cache when it is fresh, and the
  text flake8 gives (an editor's unsaved buffer, ``flake8 -``) replaces its file's own facts.
  So flake8 reports what the CLI reports on the whole project, AGL502 included when it is
  selected; a file of no project is judged alone, as the CLI judges it, and AGL502 (a
  Function no gradcheck reaches) stays off there: it would flag every Function whose test
  lives in another file. Never imports torch.
"""

from __future__ import annotations

import ast
import gc
import os
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Iterator, Sequence

from autograd_lint import __version__
from autograd_lint.analysis.names import module_name_of  # standard library only: cheap to import
from autograd_lint.catalogue import PARSE_ERROR, RULES
from autograd_lint.gc_pause import gc_paused

if TYPE_CHECKING:  # loaded lazily: see _lint
    from typing import Optional

    from autograd_lint.config import Config
    from autograd_lint.engine import ProjectSnapshot
    from autograd_lint.selection import RuleFilter, RulesPerFile

Flake8Result = tuple[int, int, str, type]

# Rules whose question spans the project: a lone file's answer would be wrong, not partial.
PROJECT_WIDE_CODES = tuple(code for code, info in RULES.items() if info.project_wide)


def may_matter(text: str) -> bool:
    """Can linting ``text`` on its own find anything? Cheaper than, and implied by, the
    engine's own text check: a Function class must name ``...Function`` among its bases, and
    the only other findings of a lone file come from gradcheck calls."""
    return "Function" in text or "gradcheck" in text


class Plugin:
    name = "autograd-lint"
    version = __version__

    # Opt-in codes named in full by flake8's --select/--extend-select (set by parse_options,
    # in the main process and, under spawn, again in each worker; plugin instances keep no
    # other state, so flake8 -j can run them anywhere).
    selected_opt_in: frozenset[str] = frozenset()

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        # flake8 runs plugins that take `tree` once per file, and skips them (reporting E999)
        # when the file does not parse; the text is taken from `lines`, never re-read.
        self.filename = filename
        self.lines = lines
        self.tree = tree  # handed to the engine: the file is not parsed twice

    @classmethod
    def parse_options(cls, options) -> None:
        named = {
            selector.strip().upper()
            for values in (getattr(options, "select", None), getattr(options, "extend_select", None))
            for selector in (values or ())
        }
        cls.selected_opt_in = frozenset(code for code in named if code in RULES and not RULES[code].default_enabled)

    def run(self) -> Iterator[Flake8Result]:
        text = "".join(self.lines)
        undecodable = _undecodable(self.filename, text)
        if undecodable:
            yield 1, 0, f"{PARSE_ERROR} {undecodable}", type(self)
            return
        project = None
        if not may_matter(text):
            # A class of a text in no package derived from a relatively imported base: nothing
            # can say what the base is, and the engine's AGL002 notice says so.
            unseen_base = "from ." in text and not module_name_of(self.filename).package
            # It may still subclass or use a Function class of another module: the project says.
            if not _may_have_a_project(os.path.dirname(os.path.abspath(self.filename))):
                if not unseen_base:
                    return
            else:
                project = _project_of(self.filename)
                if (project is None or not project.may_matter(text)) and not unseen_base:
                    return
        for line, column, message in _lint(self.filename, text, self.selected_opt_in, self.tree, project):
            yield line, column - 1, message, type(self)


def _lint(filename: str, text: str, opt_in: frozenset[str], tree: ast.AST = None,
          project: "ProjectSnapshot" = None) -> list[tuple[int, int, str]]:
    """(line, 1-based column, "CODE message") of each finding; bugs of ours go to stderr."""
    from autograd_lint.engine import lint_text  # the analysis (and libcst) loads later, if needed

    # Our parse allocates many small objects while flake8 holds this file's whole ast (and
    # pycodestyle its tokens): each collection the allocations trigger would walk all of them
    # again.
    try:
        with gc_paused():
            project = project or _project_of(filename)
            selection = _selection_for(os.path.dirname(os.path.abspath(filename)), opt_in, project is not None)(filename)
            # flake8 applies `# noqa` itself (and --disable-noqa must show everything); the class
            # comments `# autograd-lint: disable=...` are ours and still apply. The text's own facts
            # replace its file's in the project's (an editor's unsaved buffer).
            result = lint_text(filename, text, selection, project=project, honour_noqa=False, tree=tree,
                               annotate_fixes=False)
    except Exception as error:  # noqa: BLE001 - a bug of ours must not abort the user's flake8 run
        _stderr(f"internal error on {filename}: {type(error).__name__}: {error}")
        return []
    finally:
        _hide_the_analysis_from_the_collector()
    for message in result.internal_errors:
        _stderr(f"internal error: {message}")
    return [(f.line, f.column, f"{f.code} {f.message}") for f in result.findings]


def _undecodable(filename: str, text: str) -> str:
    """Why Python cannot read ``filename``, as the CLI says it, or "". flake8 falls back to
    Latin-1 when a file is not valid in its declared encoding (UTF-8 without a coding line), so
    the text it hands over always decodes; Python refuses such a file, and so does the CLI
    (AGL000). Only a text with non-ASCII characters can have been decoded that way, so an
    ASCII file (nearly every file) costs one ``isascii``. A buffer on stdin cannot be read
    again and is taken as flake8 decoded it."""
    if text.isascii() or filename in ("-", "stdin") or not os.path.isfile(filename):
        return ""
    from autograd_lint.source import SourceError, read_bytes, text_of

    try:
        data = read_bytes(filename, None)
        if data.decode("latin-1").splitlines() != text.splitlines():
            return ""  # not the text flake8 has: an editor's unsaved buffer, or a file changed since
        text_of(data)
    except SourceError as error:
        return str(error)
    return ""


_analysis_hidden = False


def _hide_the_analysis_from_the_collector() -> None:
    """Once the analysis has been loaded (libcst with it, by the first file that defines a
    Function class), move every object that exists now out of the garbage collector's sight.

    Loading it leaves some 25,000 long-lived objects (libcst's node classes and grammar, our
    rules) in flake8's process, and every full collection would walk them again: over torch
    (flake8 -j 1, 287 full collections), the collector's time went from 5.5 s to 11 s or more,
    ten times the plugin's own work (0.7 s); frozen, it is 5.6 s. ``gc.freeze()`` is what a
    forking server does before it forks: module-level objects live until exit anyway, and
    frozen objects are still freed by reference counting; only cyclic garbage that exists at
    this moment would be kept, and a collection runs first. A process that runs flake8 again
    and again (an editor's language server running it in-process) does this once."""
    global _analysis_hidden
    if not _analysis_hidden and "libcst" in sys.modules:
        _analysis_hidden = True
        gc.collect()
        gc.freeze()


@lru_cache(maxsize=256)
def _config_for(directory: str) -> "Config":
    """The ``[tool.autograd-lint]`` settings for files of ``directory``, as the CLI finds them."""
    from autograd_lint.config import ConfigError, empty_config, find_config, load_config
    from autograd_lint.selection import SelectorError

    try:
        # Finding the file parses it already (is its table there?): invalid TOML fails here.
        found = find_config(directory)
        if found is not None:
            # Unknown keys are the CLI's to warn about; an editor would repeat it on every file.
            return load_config(found, lambda message: None)
    except (ConfigError, SelectorError, OSError) as error:
        _warn_once(f"{error}; using the default rules")
    return empty_config(directory)


@lru_cache(maxsize=256)
def _selection_for(directory: str, opt_in: frozenset[str], in_a_project: bool = True) -> "RulesPerFile":
    """The rules for files of ``directory``: its ``[tool.autograd-lint]``, then flake8's picks.
    ``in_a_project``: the files have a project (``project_scope``), whose facts make the
    project-wide rules right; a file of none is judged alone, and they stay off (AGL502 would
    flag every Function whose test is in another file)."""
    from autograd_lint.selection import RulesPerFile, EnabledRules, SelectorLayer

    config = _config_for(directory)
    flake8_layer = SelectorLayer(extend_select=tuple(sorted(opt_in)))
    selection = EnabledRules.from_layers([config.selector_layer(), flake8_layer])
    if not in_a_project:
        selection = selection.without(PROJECT_WIDE_CODES)
    return RulesPerFile(selection, config.per_file_ignores, config.root)


@lru_cache(maxsize=256)
def _may_have_a_project(directory: str) -> bool:
    """Is a settings file, a repository or a package around ``directory`` (``project_scope``)?
    Asked with plain file system calls: a file of no project loads nothing more."""
    if os.path.isfile(os.path.join(directory, "__init__.py")):
        return True
    while True:
        if os.path.exists(os.path.join(directory, ".git")) or os.path.isfile(os.path.join(directory, "pyproject.toml")):
            return True
        parent = os.path.dirname(directory)
        if parent == directory:
            return False
        directory = parent


def _project_of(filename: str) -> "Optional[ProjectSnapshot]":
    """The facts of the project of ``filename`` on disk (None: it has none), gathered once per
    project and process from the CLI's cache (``engine.gather_project``)."""
    from autograd_lint.project_scope import project_root

    config = _config_for(os.path.dirname(os.path.abspath(filename)))
    root = project_root(filename, config)
    if root is None:
        return None
    if config.path is None:  # the same defaults for every directory of the project: one load
        from autograd_lint.config import empty_config

        config = empty_config(root)
    return _project(root, config)


@lru_cache(maxsize=16)
def _project(root: str, config: "Config") -> "ProjectSnapshot":
    from autograd_lint.config import DEFAULT_CACHE_DIR
    from autograd_lint.discovery import exclude_spec
    from autograd_lint.engine import gather_project
    from autograd_lint.project_scope import project_files
    from autograd_lint.source import DEFAULT_MAX_FILE_SIZE

    found = project_files(root, config, exclude_spec(config.exclude, config.extend_exclude))
    cache_dir = os.path.join(str(config.root) if config.path is not None else root,
                             config.cache_dir or DEFAULT_CACHE_DIR)
    project = gather_project(found.files, config.max_file_size or DEFAULT_MAX_FILE_SIZE, cache_dir, found.stats)
    # Kept until the process ends, as the loaded analysis is: out of the collector's sight too.
    gc.collect()
    gc.freeze()
    return project


# --- for the language server: one buffer judged as flake8 judges it -------------------------

def project_of(filename: str) -> "Optional[ProjectSnapshot]":
    """The facts of the project of ``filename`` on disk (kept for the process), or None when
    it belongs to no project."""
    return _project_of(filename)


def selection_for(filename: str, in_a_project: bool) -> "RuleFilter":
    """The rules enabled for ``filename`` by its ``[tool.autograd-lint]`` settings."""
    return _selection_for(os.path.dirname(os.path.abspath(filename)), frozenset(), in_a_project)(filename)


def forget(settings: bool = True) -> None:
    """Read again, at the next ask, the projects' facts on disk (a file was saved), and with
    ``settings`` the settings too (a ``pyproject.toml`` changed)."""
    _project.cache_clear()
    if settings:
        for cached in (_config_for, _selection_for, _may_have_a_project):
            cached.cache_clear()


@lru_cache(maxsize=None)
def _warn_once(message: str) -> None:
    _stderr(f"warning: {message}")


def _stderr(message: str) -> None:
    print(f"autograd-lint: {message}", file=sys.stderr)
