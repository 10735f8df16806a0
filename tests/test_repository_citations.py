"""The repository stands on its own: what its comments, docstrings and documents cite is in it.

Two checks over every tracked Python file's comments and docstrings and every tracked Markdown
file:
- a path into one of the repository's own folders (``docs/...``, ``rules/...``,
  ``autograd_lint/...``) or one of its top-level files names a file that exists;
- nothing cites the design notes the project was started from, which a contributor never sees
  (what the code relies on from them is written down in ``docs/runtime-mechanisms.md`` and the
  rule pages).

Paths into other projects (``torch/autograd/function.py``) and example names of user files
(``src/ops.py``) are not ours to check.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OWN_FOLDERS = ("autograd_lint", "bench", "docs", "fixtures", "rules", "scripts", "tests", ".ci")
OWN_TOP_FILES = ("README.md", "CONTRIBUTING.md", "pyproject.toml", "constraints-test.txt",
                 ".pre-commit-hooks.yaml")
PATH = re.compile(r"(?<![\w/.*<-])((?:[\w.-]+/)*[\w.-]+\.(?:md|py|toml|txt|json|cfg|yaml|yml|sh))\b")
# A placeholder, not a file: rules/CODE.md, rules/AGLxxx.md, bench/NAME.py; and AGL209, the
# example rule CONTRIBUTING.md walks through, whose files the scaffold would write.
PLACEHOLDER = re.compile(r"\b(?:CODE|NAME|AGL\d?x+|x{2,})\b|agl209|AGL209")
OUTSIDE_NOTES = re.compile(r"runtime-facts|real-code-idioms|product\.md|shared/(?:spec|reference)"
                           r"|(?<![\w/])rules\.md")


def _tracked() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [path for path in listed.stdout.splitlines() if (ROOT / path).is_file()]


def _prose(path: str) -> list[tuple[int, str]]:
    """(line, text) of the comments and docstrings of a Python file, or the lines of a document."""
    text = (ROOT / path).read_text(encoding="utf-8")
    if path.endswith(".md"):
        return list(enumerate(text.splitlines(), 1))
    found = [(token.start[0], token.string)
             for token in tokenize.generate_tokens(io.StringIO(text).readline) if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                found.append((node.body[0].lineno, docstring))
    return found


def _cited(paths: list[str]) -> list[tuple[str, int, str]]:
    citations = []
    for path in paths:
        if path.startswith("fixtures/") or not path.endswith((".py", ".md")):
            continue  # fixtures are user code, linted as such
        for line, text in _prose(path):
            citations.extend((path, line, match.group(1)) for match in PATH.finditer(text))
            citations.extend((path, line, f"<outside note> {match.group(0)}") for match in OUTSIDE_NOTES.finditer(text))
    return citations


def test_own_paths_exist() -> None:
    tracked = _tracked()
    missing = []
    for path, line, cited in _cited(tracked):
        if cited.startswith("<outside note>") or PLACEHOLDER.search(cited):
            continue
        own = cited.startswith(tuple(f"{folder}/" for folder in OWN_FOLDERS)) or cited in OWN_TOP_FILES
        if own and not (ROOT / cited).exists():
            missing.append(f"{path}:{line}: {cited}")
    assert not missing, "cited files that are not in the repository:\n" + "\n".join(missing)


def test_no_outside_design_notes() -> None:
    cited = [f"{path}:{line}: {what}" for path, line, what in _cited(_tracked()) if what.startswith("<outside note>")]
    assert not cited, "comments cite notes that are not in the repository:\n" + "\n".join(cited)


def test_the_check_sees_a_missing_file(tmp_path: Path) -> None:
    """The two checks above would fail on a stale citation (guards the regexes)."""
    assert PATH.search("see docs/gone.md, M3").group(1) == "docs/gone.md"
    assert OUTSIDE_NOTES.search("what raises (runtime-facts #12)")
    assert OUTSIDE_NOTES.search("as rules.md says")
    assert not OUTSIDE_NOTES.search("the page rules/AGL101.md")
