"""The cheap text checks that decide whether a file is worth parsing at all.

Reading bytes costs ~0.07 s for all of torch; parsing costs seconds. A file that never mentions
``Function`` (or a Function class of the project) cannot define one, and one that never mentions
``gradcheck`` or ``.apply(`` adds nothing to the project-wide facts.
"""

from __future__ import annotations

import re
from typing import Iterable

_FACT_WORDS = re.compile(r"Function|gradcheck|\.apply\(")


def may_define_function(text: str, project_function_names: Iterable[str] = ()) -> bool:
    """Could ``text`` hold a Function class, or use one of the project's (by name)?"""
    if "Function" in text:
        return True
    return any(name in text for name in project_function_names)


def may_hold_facts(text: str) -> bool:
    """Could ``text`` contribute project-wide facts (Function classes, gradcheck calls, .apply)?"""
    return _FACT_WORDS.search(text) is not None
