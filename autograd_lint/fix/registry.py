"""The fixer of each fixable code. A fixer is ``fix(context, finding) -> Fix | None``: None when
it cannot be sure of a rewrite (then the finding stays, and ``fix_available`` is false).

Which codes are fixable, and how safely, is the catalogue's ``fix``/``fix_safety``
(``autograd_lint.catalogue``). The fixer is the ``fix`` function of the row's
``RuleInfo.fix_module``: ``fix/agl101.py`` for AGL101, or a module that several codes share
(``fix/clone.py`` for AGL301 and AGL302). Imports libcst and every fixer: loaded only when a
finding has a fixable code.
"""

from __future__ import annotations

from importlib import import_module
from typing import Callable, Optional

from autograd_lint.catalogue import RULES
from autograd_lint.findings import Finding
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix

Fixer = Callable[[FixContext, Finding], Optional[Fix]]


def _load_fixers() -> dict[str, Fixer]:
    return {code: import_module(f"{__package__}.{info.fix_module}").fix
            for code, info in RULES.items() if info.fixable}


FIXERS: dict[str, Fixer] = _load_fixers()
