"""Every rule, one module each. A rule module has ``CODE`` and ``check(module) -> findings``,
reads only the shared analysis (``autograd_lint.analysis``), and documents itself in
``rules/<CODE>.md`` at the repository root.

The modules are not listed here: each catalogue row with ``has_rule_module`` names its module
(``RuleInfo.rule_module``: AGL101 backward-return-count is ``agl101_backward_return_count``), so
adding a rule is a catalogue row and a module of that name (CONTRIBUTING.md).
"""

from __future__ import annotations

from importlib import import_module
from typing import Callable, Iterable

from autograd_lint.catalogue import RULES


def _load_checks() -> dict[str, Callable[..., Iterable]]:
    checks = {}
    for code, info in RULES.items():
        if info.has_rule_module:
            module = import_module(f"{__name__}.{info.rule_module}")
            if module.CODE != code:  # a copied module whose CODE was not changed
                raise ImportError(f"{module.__name__} declares CODE = {module.CODE!r}, its catalogue row is {code}")
            checks[code] = module.check
    return checks


RULE_CHECKS: dict[str, Callable[..., Iterable]] = _load_checks()
