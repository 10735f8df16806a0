"""The fixer of each fixable code. A fixer is ``fix(context, finding) -> Fix | None``: None when
it cannot be sure of a rewrite (then the finding stays, and ``fix_available`` is false).

Which codes are fixable, and how safely, is the catalogue's ``fix``/``fix_safety``
(``autograd_lint.catalogue``); this dict only says which function does it, as some codes share
one (tests/test_catalogue.py keeps the two equal). Imports libcst: loaded only when a finding
has a fixable code."""

from __future__ import annotations

from typing import Callable, Optional

from autograd_lint.findings import Finding
from autograd_lint.fix import agl101, agl103, agl104, agl201, agl202, agl304, agl402, agl501, clone
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix

Fixer = Callable[[FixContext, Finding], Optional[Fix]]

FIXERS: dict[str, Fixer] = {
    "AGL101": agl101.fix,
    "AGL103": agl103.fix,
    "AGL104": agl104.fix,
    "AGL201": agl201.fix,
    "AGL202": agl202.fix,
    "AGL207": agl201.fix,  # the same rewrite: the tensor goes to save_for_backward
    "AGL301": clone.fix,
    "AGL302": clone.fix,
    "AGL304": agl304.fix,
    "AGL402": agl402.fix,
    "AGL501": agl501.fix,
}
