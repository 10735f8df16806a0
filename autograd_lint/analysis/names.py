"""What a name written in a module means: which class, of which module, it refers to.

A base class or a called name is a Function class only when the module's own scope and imports
say so. The rules, in order:
1. a name the module defines itself (a class, a function, an assignment) means its own
   definition: ``class Type:`` in torchgen/model.py is not torch's Function ``Type``;
2. an imported name means the imported module's name (``from a.b import X``: module ``a.b``'s
   ``X``; a relative import resolves against the file's package), followed through the imports
   of that module when it re-exports the name (``pkg/__init__.py``: ``from .ops import X``);
3. only a name that nothing local or imported defines (a star import from outside the linted
   files, ``ops.MyFn`` on an object we cannot follow) is matched by its name alone, among the
   Function classes of the same top-level package or of a top-level package that one of the two
   imports from the other;
4. whatever is still ambiguous means nothing: the rules stay silent.

Modules are named from their paths as Python would import them: the directories above a file
count while they hold an ``__init__.py``; a file in a plain directory is a top-level module.
A class is then known by its key, ``module.Class``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Iterable, Mapping, Optional

# How many modules a name may pass through (re-exports, aliases) before we give up on it.
_MAX_HOPS = 4


@dataclass(frozen=True)
class ModuleName:
    """A module's dotted name, and whether it is a package's ``__init__``: relative imports
    resolve against the module's package, which for an ``__init__`` is the module itself."""

    name: str
    is_package: bool = False

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]

    @property
    def top(self) -> str:
        return self.name.partition(".")[0]

    def key(self) -> str:
        """A short text that tells two modules apart (a cache key)."""
        return self.name + ("/__init__" if self.is_package else "")


def module_name_of(path: str) -> ModuleName:
    """The name under which Python would import the file at ``path``: its stem, preceded by the
    names of the directories above it that are packages (hold an ``__init__.py``)."""
    directory, file_name = os.path.split(os.path.abspath(path))
    stem = file_name.rsplit(".", 1)[0] if "." in file_name else file_name
    packages = _packages_above(directory)
    if stem == "__init__":
        if packages:
            return ModuleName(".".join(packages), is_package=True)
        return ModuleName(os.path.basename(directory) or "__init__", is_package=True)
    return ModuleName(".".join(packages + (stem,)))


@lru_cache(maxsize=None)
def _packages_above(directory: str) -> tuple[str, ...]:
    """The package names from the outermost package down to ``directory`` (empty when
    ``directory`` holds no ``__init__.py``). Cached per directory: a tree's files share them."""
    if not os.path.isfile(os.path.join(directory, "__init__.py")):
        return ()
    parent = os.path.dirname(directory)
    if parent == directory:
        return ()
    return _packages_above(parent) + (os.path.basename(directory),)


def absolute(target: str, module: ModuleName) -> Optional[str]:
    """An import's target made absolute: ``.ops.MyFn`` in module ``pkg.sub.mod`` is
    ``pkg.sub.ops.MyFn``. None when the relative import climbs above the top-level package."""
    if not target.startswith("."):
        return target
    rest = target.lstrip(".")
    level = len(target) - len(rest)
    parts = module.package.split(".") if module.package else []
    if level - 1 >= len(parts):  # `from ... import X` above the top-level package: ImportError
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([rest] if rest else [])) or None


@dataclass
class ModuleSymbols:
    """What one module's top level binds, as far as resolving names needs: imports (local name
    -> target, relative targets kept relative), star imports, and its own definitions (a class,
    a function or an assignment: with the dotted name assigned when there is one, ``X = ops.Y``)."""

    imports: dict[str, str] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    # name -> None (a class or def), the dotted name assigned to it, or "" (another value)
    defined: dict[str, Optional[str]] = field(default_factory=dict)


@dataclass
class NameTable:
    """The project's side of name resolution: which class keys are Function classes, and what
    each linted module binds (only the bindings that can lead to a Function class)."""

    function_keys: frozenset[str] = frozenset()
    # module name -> {local name: absolute target} for names that can lead to a Function class
    exports: dict[str, dict[str, str]] = field(default_factory=dict)
    star_exports: dict[str, tuple[str, ...]] = field(default_factory=dict)  # module -> absolute star modules
    modules: frozenset[str] = frozenset()  # every module whose facts were gathered
    tops: frozenset[str] = frozenset()  # their top-level packages
    related_tops: frozenset[tuple[str, str]] = frozenset()  # (a, b): some module of a imports b
    by_name: dict[str, tuple[str, ...]] = field(default_factory=dict)  # class name -> Function keys

    def with_functions(self, function_keys: Iterable[str]) -> "NameTable":
        """This table, with these keys as the Function classes."""
        keys = frozenset(function_keys)
        by_name: dict[str, list[str]] = {}
        for key in sorted(keys):
            by_name.setdefault(key.rpartition(".")[2], []).append(key)
        return replace(self, function_keys=keys, by_name={name: tuple(found) for name, found in by_name.items()})

    def lookup(self, target: str, hops: int = 0) -> Optional[str]:
        """The Function key that the absolute name ``target`` refers to, or None: not a Function
        class (or nothing we can follow)."""
        if target in self.function_keys:
            return target
        module, _, name = target.rpartition(".")
        if not module or hops >= _MAX_HOPS:
            return None
        if module in self.exports and name in self.exports[module]:
            return self.lookup(self.exports[module][name], hops + 1)
        for star in self.star_exports.get(module, ()):
            found = self.lookup(f"{star}.{name}", hops + 1)
            if found is not None:
                return found
        return None

    def in_project(self, target: str) -> bool:
        """Does ``target`` name something inside the linted packages (then what they define
        decides, and a miss means: not a Function class)?"""
        return target.partition(".")[0] in self.tops

    def by_suffix(self, target: str) -> Optional[str]:
        """An import from a module outside the linted packages, matched to a Function class of
        a linted module whose dotted name ends the same way (``from mylib.ops import MyFn``
        with ``src/mylib/ops.py`` linted as module ``ops``, or the other way round)."""
        module, _, name = target.rpartition(".")
        if not module:
            return None
        found = {key for key in self.by_name.get(name, ()) if _same_tail(key.rpartition(".")[0], module)}
        if not found:  # re-exported by a package of that name (`from mylib import MyFn`)
            reexporters = [m for m in set(self.exports) | set(self.star_exports) if _same_tail(m, module)]
            found = {k for k in (self.lookup(f"{m}.{name}") for m in reexporters) if k is not None}
        return found.pop() if len(found) == 1 else None

    def by_name_alone(self, name: str, module: ModuleName) -> Optional[str]:
        """The one Function class named ``name`` in ``module``'s top-level package or in one it
        is related to by an import; None when there is none, or more than one."""
        found = [key for key in self.by_name.get(name, ()) if self._related(module.top, key.partition(".")[0])]
        return found[0] if len(found) == 1 else None

    def _related(self, a: str, b: str) -> bool:
        return a == b or (a, b) in self.related_tops or (b, a) in self.related_tops


def _same_tail(a: str, b: str) -> bool:
    return a == b or a.endswith("." + b) or b.endswith("." + a)


class Scope:
    """Resolves the names written in one module (see the module docstring)."""

    def __init__(self, module: ModuleName, symbols: ModuleSymbols, table: NameTable) -> None:
        self.module, self.symbols, self.table = module, symbols, table
        self._memo: dict[str, Optional[str]] = {}

    def function_key(self, dotted: str) -> Optional[str]:
        """The key of the Function class that ``dotted`` (``MyFn``, ``ops.MyFn``) written in this
        module refers to, or None."""
        if dotted not in self._memo:
            self._memo[dotted] = self._resolve(dotted, 0)
        return self._memo[dotted]

    def unseen_import(self, dotted: str) -> Optional[str]:
        """The import ``dotted`` (a base class) comes from, as written (``.base.Scaled``), when it
        is a relative import that cannot resolve: the module lies in no package (stdin without
        its file name, a file copied alone), so no module of the run is the one it names. None
        otherwise: a name the module defines, an absolute import (a library's, or the project's,
        which the project's facts answer), a relative import that resolves."""
        head, _, rest = dotted.partition(".")
        if head in self.symbols.defined or head not in self.symbols.imports:
            return None
        target = self.symbols.imports[head]
        if not target.startswith(".") or absolute(target, self.module) is not None:
            return None
        return target + ("." + rest if rest else "")

    def _resolve(self, dotted: str, hops: int) -> Optional[str]:
        head, _, rest = dotted.partition(".")
        symbols, table = self.symbols, self.table
        if head in symbols.defined:
            assigned = symbols.defined[head]
            if assigned and hops < _MAX_HOPS and assigned.partition(".")[0] != head:
                return self._resolve(assigned + ("." + rest if rest else ""), hops + 1)  # `X = ops.Y`
            return table.lookup(f"{self.module.name}.{dotted}")
        if head in symbols.imports:
            target = absolute(symbols.imports[head], self.module)
            if target is None:
                # A relative import above the packages we know of (a folder without
                # `__init__.py`, imported as a namespace package): its module by the tail.
                written = symbols.imports[head].lstrip(".") + ("." + rest if rest else "")
                return table.by_suffix(written)
            target += "." + rest if rest else ""
            found = table.lookup(target)
            if found is not None or table.in_project(target):
                return found
            return table.by_suffix(target)
        for star in symbols.star_imports:
            module = absolute(star, self.module)
            if module is not None and (module in table.modules or table.in_project(module)):
                found = table.lookup(f"{module}.{dotted}")
                if found is not None:
                    return found
        # Nothing here defines the name: its last part, by name alone.
        return table.by_name_alone(dotted.rpartition(".")[2], self.module)


def build_name_table(modules: Mapping[ModuleName, ModuleSymbols], candidate_names: Iterable[str]) -> NameTable:
    """The bindings of these modules that can lead to a class named one of ``candidate_names``
    (the project's Function class names, by name), without Function keys yet
    (``with_functions``)."""
    names = frozenset(candidate_names)
    exports: dict[str, dict[str, str]] = {}
    star_exports: dict[str, tuple[str, ...]] = {}
    related: set[tuple[str, str]] = set()
    for module, symbols in modules.items():
        kept = exports.get(module.name, {})  # two files may have one name (scripts in two folders)
        for local, target in symbols.imports.items():
            resolved = absolute(target, module)
            if resolved is None:
                continue
            top = resolved.partition(".")[0]
            if top != module.top:
                related.add((module.top, top))
            if local in names or resolved.rpartition(".")[2] in names:
                kept[local] = resolved
        for local, assigned in symbols.defined.items():  # `MyFn = _ops.MyFn` at module level
            if assigned and local in names and local not in kept:
                head, _, rest = assigned.partition(".")
                if head in symbols.imports:
                    resolved = absolute(symbols.imports[head], module)
                    if resolved is not None:
                        kept[local] = resolved + ("." + rest if rest else "")
                elif head in symbols.defined:
                    kept[local] = f"{module.name}.{assigned}"
        if kept:
            exports[module.name] = kept
        stars = tuple(s for s in (absolute(t, module) for t in symbols.star_imports) if s is not None)
        for star in stars:
            if star.partition(".")[0] != module.top:
                related.add((module.top, star.partition(".")[0]))
        if stars:
            star_exports[module.name] = star_exports.get(module.name, ()) + stars
    return NameTable(
        exports=exports,
        star_exports=star_exports,
        modules=frozenset(m.name for m in modules),
        tops=frozenset(m.top for m in modules),
        related_tops=frozenset(related),
    )
