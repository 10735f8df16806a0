"""``--explain CODE``: print the rule's page (``rules/CODE.md`` of the repository).

An installed wheel carries the pages as ``autograd_lint/rule_pages/`` (pyproject force-includes
``rules/`` there); an editable install or a checkout reads ``rules/`` next to the package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, TextIO

from autograd_lint.catalogue import RULES

_PACKAGE_DIR = Path(__file__).resolve().parent
PAGE_DIRS = (_PACKAGE_DIR / "rule_pages", _PACKAGE_DIR.parent / "rules")


class ExplainError(Exception):
    pass


def resolve_code(text: str) -> str:
    """The code for ``text``: a code in any case (``agl201``) or a rule name (``ctx-tensor-attribute``)."""
    wanted = text.strip()
    if wanted.upper() in RULES:
        return wanted.upper()
    by_name = {info.name: code for code, info in RULES.items()}
    if wanted.lower() in by_name:
        return by_name[wanted.lower()]
    raise ExplainError(f"unknown rule {text!r}; valid codes: {', '.join(RULES)}")


def page_path(code: str) -> Optional[Path]:
    # Every code, the runtime ones (AGL901-904) included, has its own catalogue row and its own
    # page; a page shared by a family of codes (``AGL9xx.md``) is still accepted as a fallback.
    names = (f"{code}.md", f"{code[:4]}xx.md")
    for directory in PAGE_DIRS:
        for name in names:
            if (directory / name).is_file():
                return directory / name
    return None


def explain(text: str, out: TextIO) -> None:
    code = resolve_code(text)
    page = page_path(code)
    if page is None:
        info = RULES[code]
        raise ExplainError(
            f"{code} ({info.name}: {info.summary}) has no rule page yet; "
            f"looked for {code}.md in {' and '.join(str(d) for d in PAGE_DIRS)}"
        )
    text = page.read_text(encoding="utf-8")
    out.write(text if text.endswith("\n") else text + "\n")
