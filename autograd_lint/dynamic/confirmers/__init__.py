"""One confirmer per rule code: ``CONFIRMERS[code](subject) -> (confirmation, evidence)``.

The codes are the catalogue's ``confirmable`` rows (``autograd_lint.catalogue``). The confirmer
of a rule is the function named after it (``RuleInfo.python_name``: ``backward_return_count``
for AGL101 backward-return-count) in one of the modules below, which group the confirmers by
what they run (calling, ctx state, in-place writes...).

Each confirmer reads like the "How --dynamic confirms it" section of ``rules/<code>.md``. It may
raise :class:`~autograd_lint.dynamic.confirmers.probe.Unverifiable` (its message is the
evidence); ``autograd_lint.dynamic.confirm`` turns that, and any other exception, into
``unverified``. Imports torch: load only inside the ``--dynamic`` child.
"""

from __future__ import annotations

from types import ModuleType
from typing import Callable

from autograd_lint.catalogue import RULES, RuleInfo
from autograd_lint.dynamic.confirmers import (
    backward_values, calling, ctx_state, double_backward, inplace, strided, transforms,
)
from autograd_lint.dynamic.confirmers.probe import Result, Subject

Confirmer = Callable[[Subject], Result]

_GROUPS: tuple[ModuleType, ...] = (backward_values, calling, ctx_state, double_backward, inplace, strided,
                                   transforms)


def _confirmer(info: RuleInfo) -> Confirmer:
    found = [getattr(group, info.python_name) for group in _GROUPS if hasattr(group, info.python_name)]
    if len(found) != 1:
        raise ImportError(f"{info.code} is confirmable: expected one function {info.python_name} in "
                          f"{', '.join(group.__name__ for group in _GROUPS)}, found {len(found)}")
    return found[0]


CONFIRMERS: dict[str, Confirmer] = {code: _confirmer(info) for code, info in RULES.items() if info.confirmable}
