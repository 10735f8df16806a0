"""Which rule codes are enabled, from the defaults, the config file and the command line.

The semantics are ruff's, so users need to learn nothing new:

- A selector is a full code (``AGL201``), a prefix (``AGL2``, ``AGL``) or ``ALL``.
- Settings come in layers, applied in order: defaults, then ``[tool.autograd-lint]``, then the
  command line. A layer that has ``select`` starts over from it; a layer without ``select``
  adjusts what the layers before it enabled.
- Within one layer the more specific selector wins (``--select AGL2 --ignore AGL201`` and
  ``--ignore AGL2 --select AGL201`` both do the obvious thing); at equal specificity ignore wins.
- ``ignore`` and ``extend-ignore`` mean the same (as in ruff); both spellings exist for flake8
  habits.

One addition: opt-in rules (``default_enabled=False`` in the catalogue, such as AGL207) are only
turned on by their full code or ``ALL``. A prefix such as ``AGL3`` asks for "the AGL3 rules" and
should not surprise anyone with an off-by-default rule.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional, Protocol, Sequence

from autograd_lint.catalogue import RULES
from autograd_lint.discovery import relative_to_root

ALL = "ALL"


class SelectorError(ValueError):
    """A selector that names no rule; the message says where it came from."""


def parse_selectors(values: Iterable[str], where: str) -> tuple[str, ...]:
    """Split comma-separated selectors, normalise case, and reject ones that match nothing."""
    selectors = []
    for value in values:
        for item in value.split(","):
            selector = item.strip().upper()
            if not selector:
                continue  # tolerate "AGL201," and ", AGL3"
            if selector != ALL and not any(code.startswith(selector) for code in RULES):
                raise SelectorError(
                    f"unknown rule selector {item.strip()!r} in {where}; use ALL, a prefix such "
                    f"as AGL2, or one of the codes {', '.join(RULES)}"
                )
            selectors.append(selector)
    return tuple(selectors)


@dataclass(frozen=True)
class SelectorLayer:
    """The selectors of one settings source (the config file, or the command line)."""

    select: Optional[tuple[str, ...]] = None  # None: this layer does not start over
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()  # ignore and extend-ignore together


def _specificity(selector: str) -> int:
    return 0 if selector == ALL else len(selector)


def _selects(selector: str, code: str) -> bool:
    if selector == ALL:
        return True
    return code.startswith(selector) and (RULES[code].default_enabled or selector == code)


def _ignores(selector: str, code: str) -> bool:
    return selector == ALL or code.startswith(selector)


def _resolve_layer(layer: SelectorLayer) -> dict[str, bool]:
    """code -> enabled, for the codes this layer has an opinion about."""
    enabling = [*(layer.select or ()), *layer.extend_select]
    updates: dict[str, bool] = {}
    # Apply from least to most specific so the most specific selector writes last.
    for level in sorted({_specificity(s) for s in [*enabling, *layer.ignore]}):
        for selector in (s for s in enabling if _specificity(s) == level):
            updates.update((code, True) for code in RULES if _selects(selector, code))
        for selector in (s for s in layer.ignore if _specificity(s) == level):
            updates.update((code, False) for code in RULES if _ignores(selector, code))
    return updates


class RuleFilter(Protocol):
    """What the engine and ``--dynamic`` ask of a selection: is this code enabled? Met by
    ``EnabledRules`` and by the engine's picklable ``CodeSet``."""

    def is_enabled(self, code: str) -> bool: ...


@dataclass(frozen=True)
class CodeSet:
    """A RuleFilter as a plain set of codes: picklable, and usable in a cache key."""

    codes: frozenset[str]

    def is_enabled(self, code: str) -> bool:
        return code in self.codes

    @classmethod
    def of(cls, selection: RuleFilter) -> "CodeSet":
        return _code_set_of(selection)


@lru_cache(maxsize=64)
def _code_set_of(selection: RuleFilter) -> CodeSet:
    # Asked once per file: a run over thousands of files shares one or a few selections.
    return CodeSet(frozenset(code for code in RULES if selection.is_enabled(code)))


@dataclass(frozen=True)
class EnabledRules:
    """The set of enabled codes; what the engine asks through ``is_enabled``."""

    enabled: frozenset[str]

    @classmethod
    def default(cls) -> "EnabledRules":
        return cls(frozenset(code for code, info in RULES.items() if info.default_enabled))

    @classmethod
    def from_layers(cls, layers: Sequence[SelectorLayer]) -> "EnabledRules":
        enabled = set(cls.default().enabled)
        for layer in layers:
            updates = _resolve_layer(layer)
            if layer.select is not None:
                enabled = {code for code, on in updates.items() if on}
            else:
                enabled |= {code for code, on in updates.items() if on}
                enabled -= {code for code, on in updates.items() if not on}
        return cls(frozenset(enabled))

    def is_enabled(self, code: str) -> bool:
        return code in self.enabled

    def without(self, selectors: Iterable[str]) -> "EnabledRules":
        selectors = tuple(selectors)
        return EnabledRules(
            frozenset(c for c in self.enabled if not any(_ignores(s, c) for s in selectors))
        )


class RulesPerFile:
    """``rules_per_file(path)``: the ``EnabledRules`` for one file, the base minus the matching
    per-file-ignores.

    Patterns are gitignore-style and relative to ``root`` (the directory of the config file):
    ``tests/`` or ``test_*.py`` match at any depth, ``/scripts/*.py`` only at the root.
    """

    def __init__(
        self,
        base: EnabledRules,
        per_file_ignores: Sequence[tuple[str, tuple[str, ...]]] = (),
        root: Optional[Path] = None,
    ) -> None:
        self.base = base
        self.root = os.path.abspath(root or os.getcwd())
        self._rules = []
        if per_file_ignores:
            import pathspec  # only when there are patterns: loading it costs a cached run 10%

            self._rules = [(pathspec.GitIgnoreSpec.from_lines([pattern]), codes)
                           for pattern, codes in per_file_ignores]
        self._for_path = lru_cache(maxsize=None)(self._compute)

    def __call__(self, path: str) -> EnabledRules:
        return self._for_path(path)

    def _compute(self, path: str) -> EnabledRules:
        if not self._rules:
            return self.base
        relative = relative_to_root(path, self.root)
        ignored = [code for spec, codes in self._rules if spec.match_file(relative) for code in codes]
        return self.base.without(ignored) if ignored else self.base
