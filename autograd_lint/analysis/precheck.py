"""The cheap text pass that decides whether a file is worth parsing at all.

Reading bytes costs ~0.07 s for all of torch; parsing costs seconds. One regex pass per file
keeps what the engine needs to decide (a ``TextSummary``, small and cacheable): can it define a
Function class, subclass one of the project's, use one (import it, ``X.apply``), call
gradcheck? The decisions are then set intersections with the project's Function names, with no
second pass over the text.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import AbstractSet, Iterator

from autograd_lint.analysis.module_index import FUNCTION_BASES


# Class statements with their bases (which may span lines: [^)] matches newlines).
# `class X(<bases>)`; the literal first, so the regex engine can skip ahead to each `class`
# (a pattern anchored with ^ under re.M is tried at every position: 4x slower on torch).
# (Type parameters, `class Box[T](Base)` since Python 3.12, may sit between the name and the bases.)
_CLASS_BASES = re.compile(r"class[ \t]+\w+[ \t]*(?:\[.*?\][ \t]*)?\(([^)]*)\)")
_CODE_LINE_START = re.compile(r"\n([ \t]*)([^ \t\r\n])")
# `.apply` and `.grad_fn.` in one pass: a pattern that starts with one literal character is
# scanned for as fast as `in` scans for a word, and the two `in` passes it replaces cost twice that.
_APPLY_OR_GRAD_FN = re.compile(r"\.(?:(apply)\b|grad_fn\.)")
_NAME_AT_END = re.compile(r"(\w+)\Z")
_GRAD_FN_ATTRIBUTE = re.compile(r"\.grad_fn\.(\w+)\s*=(?!=)")
_WORD = re.compile(r"\w+")
# What a Function class derives from, as its base is written: the last name of each of torch's
# Function base classes (``torch.autograd.Function``: its words are torch, autograd, Function).
_TORCH_FUNCTION_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in FUNCTION_BASES)
_NAME_AS = re.compile(r"Function[ \t]+as[ \t]+(\w+)")
# What the index can record as a gradcheck call: `gradcheck(`, `x.gradgradcheck(`, or an import
# `... gradcheck as name` (then `name(` is the call). Mere mentions - comments, `gradcheck_wrapper=`
# in torch's 1.4 MB op database - are not worth a parse.
# No leading \b: a pattern that starts with a literal is scanned for fast (see _CLASS_BASES);
# _uses_gradcheck checks the word boundary before it.
_GRADCHECK_USE = re.compile(r"grad(?:grad)?check\b\s*(?:\(|as\b)")


@dataclass(frozen=True)
class TextSummary:
    """What one file's text can contribute, read without parsing it."""

    # a `class X(...Function...)` statement: a base written with the name of one of torch's
    # Function base classes, or an alias of it (`Function as F`)
    defines_function: bool
    base_words: frozenset[str]  # words in the bases of every class statement
    imported_words: frozenset[str]  # words on import lines
    applied_names: frozenset[str]  # `X` of every `X.apply`
    mentions_gradcheck: bool
    # Attributes set on a ctx from outside its Function: `y.grad_fn.attr = ...` (an output's
    # grad_fn is its ctx; fairscale's pipeline sets what backward reads that way).
    grad_fn_attributes: frozenset[str]
    # Base words of class statements that a relative import brings in (`from .base import
    # Scaled` then `class Gelu(Scaled)`): where the text lies in no package (stdin without its
    # file name, a file copied alone) the run cannot see them, and AGL002 says so.
    relative_base_words: frozenset[str] = frozenset()
    # Characters of the `...Function` class statements, roughly (to the next line indented no
    # deeper): what analysing the file will cost, used to share files out among workers.
    function_chars: int = 0

    def may_subclass(self, function_names: AbstractSet[str]) -> bool:
        """Could it define a subclass of one of these Function classes?"""
        return not self.base_words.isdisjoint(function_names)

    def may_use(self, function_names: AbstractSet[str]) -> bool:
        """Could it call gradcheck, or use one of these Function classes (import it, apply it)?"""
        return self.mentions_gradcheck or not (
            self.imported_words.isdisjoint(function_names) and self.applied_names.isdisjoint(function_names)
        )


def summarize(text: str) -> TextSummary:
    base_words: set[str] = set()
    function_chars = 0
    defines_function = False
    imported, relative, import_text = _imported_words(text)
    applied: list[int] = []  # where each `.apply` starts
    sets_grad_fn = False
    for match in _APPLY_OR_GRAD_FN.finditer(text):
        if match.group(1):
            applied.append(match.start())
        else:
            sets_grad_fn = True
    torch_function_names = _TORCH_FUNCTION_NAMES | _aliases_of_torch_function(import_text)
    for line_start, match in _class_statements(text):
        words = _WORD.findall(match.group(1))
        base_words.update(words)
        if not torch_function_names.isdisjoint(words):
            defines_function = True
        # What the analysis will cost: classes derived from torch's, or likely from another
        # Function class (``MyBaseFunction``; which ones are is known only once files are parsed).
        if any(word.endswith("Function") or word in torch_function_names for word in words):
            function_chars += _block_length(text, line_start, match)
    return TextSummary(
        defines_function=defines_function,
        base_words=frozenset(base_words),
        imported_words=frozenset(imported),
        applied_names=_applied_names(text, applied),
        mentions_gradcheck="gradcheck" in text and _uses_gradcheck(text),
        grad_fn_attributes=frozenset(_GRAD_FN_ATTRIBUTE.findall(text)) if sets_grad_fn else frozenset(),
        relative_base_words=frozenset(relative & base_words) if base_words else frozenset(),
        function_chars=function_chars,
    )




def _aliases_of_torch_function(text: str) -> set[str]:
    """``F`` of ``from torch.autograd import Function as F`` (and of the other names of torch's
    Function base classes): ``class MyFn(F)`` defines a Function class too. ``text``: the file's
    import statements (``_imported_words``), the only place a class is aliased: a pass over a
    few lines, not another over the whole file."""
    aliases = set()
    for match in _NAME_AS.finditer(text) if "Function" in text else ():
        start = match.start()
        while start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1  # back to the start of the word: `InplaceFunction as F`
        if text[start : match.start()] + "Function" in _TORCH_FUNCTION_NAMES:
            aliases.add(match.group(1))
    return aliases


def _class_statements(text: str) -> Iterator[tuple[int, "re.Match[str]"]]:
    """(start of its line, match) for each class statement (``class`` first on its line);
    ``match.group(1)`` is the text of its bases."""
    match = _CLASS_BASES.search(text)
    while match:
        line_start = text.rfind("\n", 0, match.start()) + 1
        if text[line_start : match.start()].strip(" \t"):
            match = _CLASS_BASES.search(text, match.start() + 1)  # `subclass X(`: look on from there
            continue
        yield line_start, match
        match = _CLASS_BASES.search(text, match.end())


def _block_length(text: str, line_start: int, statement: "re.Match[str]") -> int:
    """From the class line to the next code line indented no deeper (a string's lines at the
    margin end it early: an estimate)."""
    indent = statement.start() - line_start
    for line in _CODE_LINE_START.finditer(text, statement.end()):
        if line.group(2) != "#" and len(line.group(1)) <= indent:
            return line.start() - line_start
    return len(text) - line_start


def _uses_gradcheck(text: str) -> bool:
    for match in _GRADCHECK_USE.finditer(text):
        before = text[match.start() - 1] if match.start() else " "
        if before.isalnum() or before == "_":
            continue  # `my_gradcheck(`: not the word gradcheck
        if "#" not in text[text.rfind("\n", 0, match.start()) + 1 : match.start()]:  # not a comment
            return True
    return False


def _applied_names(text: str, applied: list[int]) -> frozenset[str]:
    """``X`` of every ``X.apply``, read backwards from where each ``.apply`` starts (``applied``:
    the literal is found first; a leading ``\\w+`` would be tried at every position of the text)."""
    names = set()
    for start in applied:
        name = _NAME_AT_END.search(text, max(0, start - 100), start)
        if name:
            names.add(name.group(1))
    return frozenset(names)


# The standard library's top-level modules (Python 3.10+; before that, none are skipped).
_STANDARD_LIBRARY = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__future__"}


def imported_words(text: str) -> set[str]:
    """Every word of the import statements (``_imported_words``)."""
    return _imported_words(text)[0]


def _imported_words(text: str) -> tuple[set[str], set[str], str]:
    """Every word of the import statements (the names a module can use from other modules),
    the names that relative imports bind, and the statements' text; except the statements that
    import from the standard library, which cannot hold a project's Function class (``from
    typing import Type`` must not make a file a user of a Function named Type).

    Searching the literal ``import`` with ``str.find`` and looking around it is 5x faster than a
    line-anchored regex (and ``str.find`` beats the regex engine at finding a literal); a few
    non-import lines that start with `import...` words only add words."""
    statements = []
    relative: set[str] = set()  # what the relative imports bind
    find, rfind = text.find, text.rfind
    position = find("import")
    while position >= 0:
        start = rfind("\n", 0, position) + 1
        head = text[start:position].lstrip(" \t") if start < position else ""
        # `import m` first on its line, or `from m import ...` where m is not the standard library's
        if head and (head[:5] != "from " or head[5:].strip().partition(".")[0] in _STANDARD_LIBRARY):
            position = find("import", position + 6)
            continue
        end = find("\n", position)
        while end > 0 and text[end - 1 - (text[end - 1] == "\r")] == "\\":  # a backslash continues it
            end = find("\n", end + 1)
        if end < 0:
            end = len(text)
        opening = find("(", position, end)
        if opening >= 0 and find(")", opening, end) < 0:  # `from m import (\n a,\n b,\n)`
            close = find(")", end)
            end = len(text) if close < 0 else close
        statements.append(text[start:end])
        if head[:6] == "from .":  # a relative import: the names it binds (AGL002)
            relative.update(_bound_names(text[position + 6:end]))
        position = find("import", position + 6)
    joined = "\n".join(statements)
    # The words: with ASCII text, splitting at every other character (translate) is 1.5x faster
    # than the regex, and finds the same words.
    words = joined.translate(_NOT_WORD).split() if joined.isascii() else _WORD.findall(joined)
    return set(words), relative, joined


# Every ASCII character that is not part of a word (``\w``), to a space.
_NOT_WORD = str.maketrans({chr(i): " " for i in range(128) if not (chr(i).isalnum() or chr(i) == "_")})


def _bound_names(items: str) -> Iterator[str]:
    """The local names of ``import``'s list: ``C`` of ``B as C``, ``B`` of ``B``."""
    for item in items.split("#", 1)[0].replace("(", " ").replace(")", " ").replace("\\", " ").split(","):
        words = item.split()
        if words and words[-1].isidentifier():
            yield words[-1]
