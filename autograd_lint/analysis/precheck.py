"""The cheap text checks that decide whether a file is worth parsing at all.

Reading bytes costs ~0.07 s for all of torch; parsing costs seconds. A file can define a
Function class only if some ``class X(...)`` statement names ``...Function`` (or a Function
class of the project) among its bases; it can use one only if it names one.
"""

from __future__ import annotations

import re
from typing import Iterable

# `class X(Function)`, `class X(ag.Function)`, `class X(InplaceFunction, metaclass=M)`; the
# bases may span lines ([^)] matches newlines). Deliberately loose: a false hit only costs a parse.
_FUNCTION_CLASS = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\([^)]*Function", re.M)


def may_define_function(text: str) -> bool:
    """Could ``text`` define a class deriving from torch's Function directly?"""
    return "Function" in text and _FUNCTION_CLASS.search(text) is not None


def names_pattern(names: Iterable[str]) -> "re.Pattern[str] | None":
    """A regex matching any of ``names`` as a whole word (None when there are none)."""
    names = sorted(set(names))
    if not names:
        return None
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")


def may_subclass(text: str, base_names: "re.Pattern[str] | None") -> bool:
    """Could ``text`` define a subclass of one of the project's Function classes?"""
    if base_names is None or "class" not in text:
        return False
    for match in re.finditer(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", text, re.M):
        if base_names.search(match.group(1)):
            return True
    return False


def uses_pattern(names: Iterable[str]) -> "re.Pattern[str] | None":
    """Matches a use of one of ``names`` from another file: ``Name.apply`` or an import line
    naming it (then ``Name(...)`` or ``Name.apply`` follow)."""
    names = sorted(set(names))
    if not names:
        return None
    alternatives = "|".join(map(re.escape, names))
    return re.compile(
        rf"\b(?:{alternatives})\.apply\b|^[ \t]*(?:from|import)\b[^\n]*\b(?:{alternatives})\b", re.M
    )


def may_use_functions(text: str, uses: "re.Pattern[str] | None") -> bool:
    """Could ``text`` call gradcheck or use a Function class of another file (see uses_pattern)?"""
    if "gradcheck" in text:
        return True
    return uses is not None and uses.search(text) is not None


_GRAD_FN_ATTRIBUTE = re.compile(r"\.grad_fn\.(\w+)\s*=(?!=)")


def grad_fn_attributes(text: str) -> set[str]:
    """Attributes set on a ctx from outside its Function: ``y.grad_fn.attr = ...`` (the
    ``grad_fn`` of an output is its ctx). backward may read them (fairscale's pipeline does)."""
    if ".grad_fn." not in text:
        return set()
    return set(_GRAD_FN_ATTRIBUTE.findall(text))
