"""The ``[tool.autograd-lint]`` table of ``pyproject.toml``.

Found by walking upward from the first PATH to the nearest ``pyproject.toml`` that has the table
(as ruff does, a ``pyproject.toml`` without it is passed over), or named with ``--config``.
Unknown keys are warnings (a typo should not break CI); a value of the wrong type is an error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from autograd_lint.selection import SelectorError, SelectorLayer, parse_selectors

# `typing` is for type checkers only (every run of the CLI imports this module; see selection.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # read only where the table is there: most runs have none, and no --dynamic
    from autograd_lint.dynamic.settings import DynamicSettings

TABLE = "autograd-lint"
# Where the cache lives, next to the settings (or in the current directory), unless cache-dir says.
DEFAULT_CACHE_DIR = ".autograd_lint_cache"


class ConfigError(Exception):
    """A config file that cannot be used; the message names the file and the key."""


class Config:
    """``Config(root, **settings)``, each setting one of the class attributes below (their values
    are the defaults). A plain class rather than a dataclass, as ``catalogue.RuleInfo``; read,
    never changed. Equal to (and hashed as) a config of the same values, as a frozen dataclass
    would be: the flake8 plugin's caches are keyed by it (one project load for all directories)."""

    root: Path  # excludes and per-file-ignores are relative to it
    path: Path | None = None  # None: no config file
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()  # ignore and extend-ignore together
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None  # None: the default excludes
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False  # excludes apply to files named on the command line too
    max_file_size: int | None = None
    cache_dir: str | None = None  # relative to root
    # Directories (glob patterns relative to root, "fixtures/*") each of which is a project of its
    # own: its files' facts are not mixed with the rest of the tree's (analysis/project.py).
    subprojects: tuple[str, ...] = ()
    dynamic: DynamicSettings | None = None  # [tool.autograd-lint.dynamic]; None: no such table

    def __init__(self, root: Path, **settings: object) -> None:
        self.root = root
        for setting, value in settings.items():
            if setting not in _SETTINGS:
                raise TypeError(f"Config() got an unexpected keyword argument {setting!r}")
            setattr(self, setting, value)

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in Config.__annotations__)

    def __eq__(self, other: object) -> bool:
        return type(other) is Config and other._values() == self._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Config(root={self.root!r}, path={self.path!r})"

    def selector_layer(self) -> SelectorLayer:
        return SelectorLayer(self.select, self.extend_select, self.ignore)


_SETTINGS = frozenset(Config.__annotations__) - {"root"}


def find_config(start: str) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.autograd-lint]`` table, upward from start."""
    directory = Path(os.path.abspath(start))
    if not directory.is_dir():
        directory = directory.parent
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / "pyproject.toml"
        if candidate.is_file() and _has_table(candidate):
            return candidate
    return None


def _has_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    # Cheap text check first: most pyproject.toml files on the way up are not ours, and one
    # that is malformed but not ours should not break the run.
    if TABLE not in text:
        return False
    return _table(_parse(pyproject, text)) is not None


def load_config(path: Path, warn: Callable[[str], None]) -> Config:
    """Read and check the settings of ``path`` (a pyproject.toml, or a TOML file of settings)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config file {path}: {getattr(error, 'strerror', None) or error}")
    document = _parse(path, text)
    table = _table(document)
    if table is None:
        if path.name == "pyproject.toml":
            warn(f"{path} has no [tool.{TABLE}] table; using the defaults")
            table = {}
        else:
            table = document  # a standalone settings file: the keys at top level
    return _config_from_table(table, path, warn)


def empty_config(root: str) -> Config:
    return Config(root=Path(os.path.abspath(root)))


def _parse(path: Path, text: str) -> dict:
    # Imported here: a run without a config file (most cached runs over a checkout) skips it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.9/3.10 only
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _table(document: dict) -> dict | None:
    tool = document.get("tool")
    table = tool.get(TABLE) if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


_LIST_KEYS = ("select", "extend-select", "ignore", "extend-ignore", "exclude", "extend-exclude", "subprojects")
KNOWN_KEYS = (*_LIST_KEYS, "force-exclude", "per-file-ignores", "max-file-size", "cache-dir", "dynamic")


def _config_from_table(table: dict, path: Path, warn: Callable[[str], None]) -> Config:
    where = f"{path} [tool.{TABLE}]"
    for key in table:
        if key not in KNOWN_KEYS:
            import difflib

            close = difflib.get_close_matches(key.replace("_", "-"), KNOWN_KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            warn(f"{where}: unknown key {key!r} ignored{hint}")

    lists = {key: _string_list(table[key], key, where) for key in _LIST_KEYS if key in table}

    def selectors(key: str) -> tuple[str, ...]:
        try:
            return parse_selectors(lists.get(key, ()), f"{key} in {where}")
        except SelectorError as error:
            raise ConfigError(str(error)) from None

    return Config(
        root=Path(os.path.abspath(path.parent)),
        path=path,
        select=selectors("select") if "select" in lists else None,
        extend_select=selectors("extend-select"),
        ignore=selectors("ignore") + selectors("extend-ignore"),
        per_file_ignores=_per_file_ignores(table.get("per-file-ignores", {}), where),
        exclude=tuple(lists["exclude"]) if "exclude" in lists else None,
        extend_exclude=tuple(lists.get("extend-exclude", ())),
        force_exclude=_boolean(table["force-exclude"], "force-exclude", where) if "force-exclude" in table else False,
        max_file_size=_positive_int(table["max-file-size"], "max-file-size", where)
        if "max-file-size" in table else None,
        cache_dir=_string(table["cache-dir"], "cache-dir", where) if "cache-dir" in table else None,
        subprojects=tuple(p.strip("/") for p in lists.get("subprojects", ()) if p.strip("/")),
        dynamic=_dynamic(table["dynamic"], where, warn) if "dynamic" in table else None,
    )


def _dynamic(value: Any, where: str, warn: Callable[[str], None]) -> DynamicSettings:
    from autograd_lint.dynamic.settings import SettingsError, parse_dynamic_table

    try:
        settings, warnings = parse_dynamic_table(value, where)
    except SettingsError as error:
        raise ConfigError(str(error)) from None
    for message in warnings:
        warn(message)
    return settings


def _boolean(value: Any, key: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {key!r} must be true or false, not {_type_name(value)}")
    return value


def _string(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key!r} must be a non-empty string, not {_type_name(value)}")
    return value


def _type_name(value: Any) -> str:
    return {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def _string_list(value: Any, key: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        example = '["AGL201", "AGL3"]' if "select" in key or "ignore" in key else '["generated/"]'
        raise ConfigError(
            f"{where}: {key} must be a list of strings, like {key} = {example}; got {_type_name(value)}"
        )
    return value


def _per_file_ignores(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(
            f'{where}: per-file-ignores must be a table, like "tests/*" = ["AGL201"]; '
            f"got {_type_name(value)}"
        )
    entries = []
    for pattern, codes in value.items():
        key = f"per-file-ignores {pattern!r}"
        try:
            entries.append((pattern, parse_selectors(_string_list(codes, key, where), f"{key} in {where}")))
        except SelectorError as error:
            raise ConfigError(str(error)) from None
    return tuple(entries)


def _positive_int(value: Any, key: str, where: str) -> int:
    # bool is an int in Python; `max-file-size = true` is still a mistake.
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{where}: {key} must be a positive integer (bytes); got {value!r}")
    return value
