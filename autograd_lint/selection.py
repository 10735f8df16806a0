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
from collections.abc import Iterable, Sequence
from functools import lru_cache

from autograd_lint.catalogue import RULES
from autograd_lint.discovery import relative_to_root

# The classes here are plain ones, not dataclasses, and `typing` is read by type checkers only:
# every run of the CLI imports this module, and `dataclasses` (with `inspect`) and `typing` cost
# about a third of that import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Protocol

    class RuleFilter(Protocol):
        """What the engine and ``--dynamic`` ask of a selection: is this code enabled? Met by
        ``EnabledRules`` and by the engine's picklable ``CodeSet``."""

        def is_enabled(self, code: str) -> bool: ...

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


class SelectorLayer:
    """The selectors of one settings source (the config file, or the command line)."""

    def __init__(self, select: tuple[str, ...] | None = None, extend_select: tuple[str, ...] = (),
                 ignore: tuple[str, ...] = ()) -> None:
        self.select = select  # None: this layer does not start over
        self.extend_select = extend_select
        self.ignore = ignore  # ignore and extend-ignore together

    def __repr__(self) -> str:
        return f"SelectorLayer({self.select!r}, {self.extend_select!r}, {self.ignore!r})"


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


class _CodesRecord:
    """A record of one frozenset of codes, equal to (and hashed as) another of its class with
    the same codes, as a frozen dataclass would be: a selection is a key of ``_code_set_of``."""

    __slots__ = ("_codes",)

    def __init__(self, codes: frozenset[str]) -> None:
        self._codes = codes

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._codes == self._codes  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._codes))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({sorted(self._codes)})"


class CodeSet(_CodesRecord):
    """A RuleFilter as a plain set of codes: picklable, and usable in a cache key."""

    __slots__ = ()

    @property
    def codes(self) -> frozenset[str]:
        return self._codes

    def is_enabled(self, code: str) -> bool:
        return code in self.codes

    @classmethod
    def of(cls, selection: RuleFilter) -> "CodeSet":
        return _code_set_of(selection)


@lru_cache(maxsize=64)
def _code_set_of(selection: RuleFilter) -> CodeSet:
    # Asked once per file: a run over thousands of files shares one or a few selections.
    return CodeSet(frozenset(code for code in RULES if selection.is_enabled(code)))


class EnabledRules(_CodesRecord):
    """The set of enabled codes; what the engine asks through ``is_enabled``."""

    __slots__ = ()

    @property
    def enabled(self) -> frozenset[str]:
        return self._codes

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
        root: Path | None = None,
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
