"""Suppression comments: ``# noqa`` / ``# noqa: AGL201`` on a line (flake8's semantics) and
``# autograd-lint: disable=AGL201,AGL3`` on a class line, for the whole class.

``suppression_problems`` reports the comments that do nothing (AGL001, ruff's RUF100): an AGL
code in a ``# noqa`` or a disable comment that no finding of that code meets, an unknown AGL
code, a disable comment that is not on the ``class`` line of a Function class, and an
``# autograd-lint:`` comment that is not ``disable=CODES``.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

from autograd_lint.catalogue import RULES, UNUSED_SUPPRESSION
from autograd_lint.findings import Finding

# flake8's own pattern: codes are separated by commas and/or whitespace.
_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_NOQA_CODES = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_DISABLE = re.compile(r"#\s*autograd-lint:\s*disable=(?P<codes>[A-Z0-9, ]+)", re.IGNORECASE)


def noqa_codes(line: str) -> Optional[frozenset[str]]:
    """None: no noqa comment; empty set: a bare ``# noqa`` (everything); else the codes."""
    match = _NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    return frozenset(c.upper() for c in _NOQA_CODES.findall(codes)) if codes else frozenset()


def noqa_code_span(comment: str) -> Optional[tuple[int, int, list[str]]]:
    """(start, end, codes) of the ``# noqa: CODES`` part of a comment; None without codes."""
    match = _NOQA.search(comment)
    if match is None or not match.group("codes"):
        return None
    return match.start(), match.end(), _NOQA_CODES.findall(match.group("codes"))


def disable_code_span(comment: str) -> Optional[tuple[int, int, list[str]]]:
    """(start, end, codes) of the ``# autograd-lint: disable=CODES`` part of a comment."""
    match = _DISABLE.search(comment)
    if match is None:
        return None
    codes = [code.strip() for code in match.group("codes").split(",") if code.strip()]
    return match.start(), match.end("codes") - (len(match.group("codes")) - len(match.group("codes").rstrip())), codes


def _matches(code: str, selectors: frozenset[str]) -> bool:
    return any(code.startswith(s) for s in selectors)


def disabled_codes(line: str) -> frozenset[str]:
    match = _DISABLE.search(line)
    if match is None:
        return frozenset()
    return frozenset(c.strip().upper() for c in match.group("codes").split(",") if c.strip())


def apply_suppressions(
    findings: Iterable[Finding],
    lines: list[str],
    class_spans: Iterable[tuple[int, int, int]],
    honour_noqa: bool = True,
) -> list[Finding]:
    """Drop suppressed findings. ``class_spans`` are (comment line, first line, last line) of each
    Function class: a disable comment on the class line covers every line of the class."""
    disabled: list[tuple[int, int, frozenset[str]]] = []
    for comment_line, first, last in class_spans:
        if 0 < comment_line <= len(lines):
            codes = disabled_codes(lines[comment_line - 1])
            if codes:
                disabled.append((first, last, codes))
    kept = []
    for finding in findings:
        if any(first <= finding.line <= last and _matches(finding.code, codes) for first, last, codes in disabled):
            continue
        if honour_noqa and 0 < finding.line <= len(lines):
            codes = noqa_codes(lines[finding.line - 1])
            if codes is not None and (not codes or _matches(finding.code, codes)):
                continue
        kept.append(finding)
    return kept


# --- comments that do nothing (AGL001) ----------------------------------------------------------

_DIRECTIVE = re.compile(r"#\s*autograd-lint\s*:", re.IGNORECASE)
_OUR_CODE = re.compile(r"^AGL[0-9]*$", re.IGNORECASE)
# Matched in the lowercased text: a pattern that starts with a literal is scanned for fast, and
# re.IGNORECASE defeats that (twice the time on torch's files with Function classes).
_AGL_NOQA_LOWERED = re.compile(r"noqa[^\n#]*agl")


@dataclass(frozen=True)
class Comment:
    line: int
    column: int  # 1-based, of the "#"
    text: str


def comments(text: str) -> list[Comment]:
    """The comments of ``text`` that may be suppressions (a tokenizer, not a regex on lines: a
    ``"# noqa"`` inside a string is not a comment)."""
    # Only comments naming an AGL code, or our directive, can be judged: a file whose noqa
    # comments are all other tools' (torch has hundreds) is not tokenized at all.
    if not _AGL_NOQA_LOWERED.search(text.lower()) and not _DIRECTIVE.search(text):
        return []
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and (_NOQA.search(token.string) or _DIRECTIVE.search(token.string)):
                found.append(Comment(token.start[0], token.start[1] + 1, token.string))
    except (tokenize.TokenError, SyntaxError):  # the parse already accepted the file; be safe
        return found
    return found


def suppression_problems(findings: Iterable[Finding], path: str, text: str,
                         class_spans: Iterable[tuple[int, int, int]], enabled: frozenset[str],
                         class_names: dict[int, str]) -> list[Finding]:
    """AGL001 findings for the suppression comments of one file. ``findings``: every finding of
    the enabled rules before suppression. A code is judged only when it names enabled static
    rules (a ``# noqa: AGL207`` for an opt-in rule left off, or an ``AGL901`` that only
    ``--dynamic`` reports, may be needed by another run)."""
    findings = list(findings)
    spans = {comment_line: (first, last) for comment_line, first, last in class_spans}
    judged = frozenset(code for code in enabled if code in RULES and RULES[code].static and code != UNUSED_SUPPRESSION)
    problems: list[Finding] = []
    for comment in comments(text):
        if _DIRECTIVE.search(comment.text):
            problems.extend(_directive_problems(comment, findings, spans, judged, class_names, path))
        else:
            codes = noqa_codes(comment.text) or frozenset()
            on_line = [f.code for f in findings if f.line == comment.line]
            problems.extend(_unused_codes(comment, sorted(codes), on_line, judged, path, "# noqa"))
    return problems


def _directive_problems(comment: Comment, findings: list[Finding], spans: dict[int, tuple[int, int]],
                        judged: frozenset[str], class_names: dict[int, str], path: str) -> Iterator[Finding]:
    codes = disabled_codes(comment.text)
    if not codes:
        yield _finding(path, comment, "malformed suppression: write `# autograd-lint: disable=AGL201` (codes "
                                      "after `disable=`, separated by commas); this comment does nothing")
        return
    if comment.line not in spans:
        where = min((line for line in spans if line > comment.line), default=None)
        hint = f" (the class on line {where}: move it there)" if where is not None and \
            where - comment.line <= 2 else ""
        yield _finding(path, comment, "misplaced suppression: `# autograd-lint: disable=` acts only on the "
                                      f"`class` line of a Function class{hint}; here it does nothing")
        return
    first, last = spans[comment.line]
    in_class = [f.code for f in findings if first <= f.line <= last]
    name = class_names.get(comment.line, "the class")
    yield from _unused_codes(comment, sorted(codes), in_class, judged, path, f"disable comment of {name}")


def _unused_codes(comment: Comment, codes: list[str], found: list[str], judged: frozenset[str], path: str,
                  what: str) -> Iterator[Finding]:
    ours = [code for code in codes if _OUR_CODE.match(code)]
    unknown = [code for code in ours if not any(known.startswith(code) for known in RULES)]
    unused = [code for code in ours if code not in unknown
              and any(rule.startswith(code) for rule in judged)
              and not any(rule.startswith(code) for rule in found)]
    if unknown:
        yield _finding(path, comment, f"unknown code{'s' * (len(unknown) > 1)} {', '.join(unknown)} in the {what}: "
                                      "no rule has it (`autograd-lint --list-rules` lists them)")
    if unused:
        yield _finding(path, comment, f"unused suppression: {', '.join(unused)} in the {what} "
                                      f"suppress{'es' * (len(unused) == 1)} no finding; remove "
                                      f"{'it' if len(unused) == 1 else 'them'}")


def _finding(path: str, comment: Comment, message: str) -> Finding:
    return Finding(path=path, line=comment.line, column=comment.column, code=UNUSED_SUPPRESSION, message=message,
                   end_line=comment.line, end_column=comment.column + len(comment.text))
