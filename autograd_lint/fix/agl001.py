"""AGL001: remove the unused codes from a suppression comment (safe).

A code that suppresses no finding of an enabled rule changes nothing when it goes; the comment's
other codes (flake8's, another tool's) and any text before it stay. When no code is left, the
``# noqa`` or disable part goes, and with it the whole comment if nothing else was in it. Only
"unused" findings are fixed: an unknown code may be a typo of a code the author meant, and a
misplaced or malformed comment needs the author to say where it belongs.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from autograd_lint.findings import Finding
from autograd_lint.fix.context import FixContext
from autograd_lint.fix.edits import Fix
from autograd_lint.suppression import noqa_code_span, disable_code_span

_UNUSED = re.compile(r"^unused suppression: (?P<codes>[A-Z0-9, ]+) in the ")


def fix(context: FixContext, finding: Finding) -> Optional[Fix]:
    match = _UNUSED.match(finding.message)
    if match is None:
        return None
    unused = {code.strip() for code in match.group("codes").split(",")}
    comment = context.node_at(cst.Comment, finding.line, finding.column)
    if comment is None:
        return None
    text = _without(comment.value, unused)
    if text == comment.value:
        return None
    if text:
        return Fix("AGL001", safe=True, edits={comment: comment.with_changes(value=text)})
    owner = _trailing_whitespace_of(context, comment)
    if owner is None:
        return None
    return Fix("AGL001", safe=True, edits={owner: owner.with_changes(whitespace=cst.SimpleWhitespace(""),
                                                                       comment=None)})


def _without(comment: str, unused: set[str]) -> str:
    """``comment`` without the ``unused`` codes of its noqa or disable part; "" when nothing is left."""
    for find_span, prefix in ((disable_code_span, "# autograd-lint: disable="), (noqa_code_span, "# noqa: ")):
        span = find_span(comment)
        if span is None:
            continue
        start, end, codes = span
        kept = [code for code in codes if code.upper() not in unused]
        if len(kept) == len(codes):
            continue
        separator = "," if prefix.endswith("=") else ", "
        middle = prefix + separator.join(kept) if kept else ""
        comment = (comment[:start] + middle + comment[end:]) if kept else \
            (comment[:start].rstrip() + " " + comment[end:].lstrip()).strip()
    return "" if comment.strip() in ("", "#") else comment


def _trailing_whitespace_of(context: FixContext, comment: cst.Comment) -> Optional[cst.TrailingWhitespace]:
    for node in context.nodes_on_line(context.start(comment)[0]):
        if isinstance(node, cst.TrailingWhitespace) and node.comment is comment:
            return node
    return None
