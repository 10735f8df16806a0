"""The rule pages under rules/ (what `autograd-lint --explain CODE` prints) stay true.

Every catalogue code has a page with the fixed structure, and the code blocks of each page are
linted with the CLI's ``main`` (in this process: a new interpreter for each of the ~120 blocks
cost more than a minute of CPU; tests/test_cli.py runs the real command): a static rule's "Example" must trigger its code and its "Use instead"
must not (pylint's model: the docs cannot drift from the analysis). The examples are also kept
clean of every other default rule, so a reader sees exactly one problem per page.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from autograd_lint.catalogue import RULES, RuleInfo
from conftest import REPO_ROOT, run_cli, run_in_process

RULES_DIR = REPO_ROOT / "rules"

HEADINGS = [
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "When it stays silent",
    "How --dynamic confirms it",
    "References",
]
# ruff's section: what --fix does for the code and whether it is safe; only the catalogue's
# fixable codes (tests/test_catalogue.py checks each has a fixer).
FIX_SAFETY = "Fix safety"
ALLOWED_LINK_PREFIXES = ("https://pytorch.org/docs/", "https://github.com/pytorch/")

ALL_CODES = sorted(RULES)
STATIC_CODES = sorted(code for code, info in RULES.items() if info.static)
FIXABLE_CODES = sorted(code for code, info in RULES.items() if info.fixable)


@dataclass(frozen=True)
class Page:
    titles: list[str]  # every "# " line outside code fences
    severity_line: str  # the first non-blank line after the title
    headings: list[str]  # every "## " heading outside code fences, in order
    sections: dict[str, str]  # heading -> its text, code fences included


def parse_page(text: str) -> Page:
    lines = text.splitlines()
    titles: list[str] = []
    headings: list[str] = []
    sections: dict[str, list[str]] = {}
    current: Optional[list[str]] = None
    in_fence = False
    for line in lines:
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("## "):
            headings.append(line[3:].strip())
            current = sections.setdefault(headings[-1], [])
            continue
        elif not in_fence and line.startswith("# "):
            titles.append(line)
        if current is not None:
            current.append(line)
    severity_line = next((line for line in lines[1:] if line.strip()), "")
    return Page(titles, severity_line, headings, {k: "\n".join(v) for k, v in sections.items()})


def python_blocks(section: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)


def expected_severity_line(info: RuleInfo) -> str:
    if not info.static:
        default = ("on —" if info.default_enabled else f"off — enable with --select {info.code};") + \
            " reported only by --dynamic"
    elif info.default_enabled:
        default = "on"
    else:
        default = f"off — enable with --select {info.code}"
    return f"Severity: {info.severity_text} · Default: {default}"


def expected_headings(code: str) -> list[str]:
    if not RULES[code].fixable:
        return HEADINGS
    after = HEADINGS.index("Use instead") + 1
    return [*HEADINGS[:after], FIX_SAFETY, *HEADINGS[after:]]


def page(code: str) -> Page:
    return parse_page((RULES_DIR / f"{code}.md").read_text(encoding="utf-8"))


def blocks(code: str) -> tuple[str, str]:
    """The page's Example block and its Use-instead block."""
    sections = page(code).sections
    (example,) = python_blocks(sections["Example"])
    (use_instead,) = python_blocks(sections["Use instead"])
    return example, use_instead


# --- structure ------------------------------------------------------------------------------


def test_every_code_has_a_page_and_every_page_a_code():
    pages = {p.stem for p in RULES_DIR.glob("*.md")} - {"README"}
    assert sorted(pages) == ALL_CODES


@pytest.mark.parametrize("code", ALL_CODES)
def test_page_structure(code):
    info = RULES[code]
    text = (RULES_DIR / f"{code}.md").read_text(encoding="utf-8")
    parsed = parse_page(text)
    assert text.splitlines()[0] == f"# {code}: {info.name}"
    assert parsed.titles == [f"# {code}: {info.name}"]
    assert parsed.severity_line == expected_severity_line(info)
    assert parsed.headings == expected_headings(code)
    for heading in parsed.headings:
        assert parsed.sections[heading].strip(), f"{code}: empty section {heading!r}"
    assert "### Fix safety" not in text, f"{code}: Fix safety is a section of its own (## Fix safety)"


def test_fix_safety_sections_follow_the_catalogue():
    """A page says how it is fixed exactly when the catalogue says the code is fixable, and
    calls the fix safe or unsafe as the catalogue's ``fix_safety`` (the README's) does."""
    with_section = {code for code in ALL_CODES if FIX_SAFETY in page(code).headings}
    assert with_section == set(FIXABLE_CODES)
    for code in FIXABLE_CODES:
        text = page(code).sections[FIX_SAFETY].lower()
        safety = RULES[code].fix_safety
        assert "--fix" in text, code
        assert ("**safe" in text) == safety.startswith("safe"), f"{code}: the page and the catalogue ({safety!r}) differ"
        assert ("**unsafe" in text) == ("unsafe" in safety), f"{code}: the page and the catalogue ({safety!r}) differ"


@pytest.mark.parametrize("code", ALL_CODES)
def test_examples_are_complete_modules(code):
    sections = page(code).sections
    for heading in ("Example", "Use instead"):
        found = python_blocks(sections[heading])
        assert len(found) == 1, f"{code}: {heading} needs exactly one ```python block"
        assert "import torch" in found[0], f"{code}: {heading} is not a complete module"
    example, use_instead = blocks(code)
    compile(use_instead, f"{code}-use-instead.py", "exec")
    if code == "AGL000":
        with pytest.raises(SyntaxError):
            compile(example, f"{code}-example.py", "exec")
    else:
        compile(example, f"{code}-example.py", "exec")


@pytest.mark.parametrize("code", ALL_CODES)
def test_links_point_only_at_pytorch(code):
    text = (RULES_DIR / f"{code}.md").read_text(encoding="utf-8")
    for url in re.findall(r"https?://[^\s`)>\]]+", text):
        assert url.startswith(ALLOWED_LINK_PREFIXES), f"{code}: link outside PyTorch's: {url}"


# --- the examples, linted with the real CLI -------------------------------------------------


def lint(source: str, extend_select: Optional[str]) -> list[tuple[str, int]]:
    """(code, line) of every finding the CLI reports for ``source`` as a file of its own.

    Each block is linted alone in a fresh directory: project-wide rules (AGL502) and call-site
    facts (AGL101) must not see the other pages' blocks.
    """
    select = ["--extend-select", extend_select] if extend_select else []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "example.py").write_text(source, encoding="utf-8")
        proc = run_in_process("--format", "json", "--no-cache", *select, "example.py", cwd=Path(tmp))
    assert proc.returncode in (0, 1), (
        f"autograd-lint exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    report = json.loads(proc.stdout)
    return [(f["code"], f["line"]) for f in report["findings"]]


@pytest.fixture(scope="module")
def linted(request):
    """The two blocks of every page that a selected test reads, linted once, keyed
    by (code, "example"|"use"): the whole run lints every page; `-k AGL209` (CONTRIBUTING's
    step 4 for a new rule) only that page's blocks.

    Static pages are linted with the default rules plus their own code; runtime pages
    (AGL9xx) with the default rules. A failed run is kept and re-raised by the test using it.
    """
    selected = {item.callspec.params["code"] for item in request.session.items
                if "linted" in getattr(item, "fixturenames", ())
                and "code" in getattr(getattr(item, "callspec", None), "params", {})}
    jobs = {}
    for code in sorted(selected):
        example, use_instead = blocks(code)
        extend = code if RULES[code].static else None
        jobs[(code, "example")] = (example, extend)
        jobs[(code, "use")] = (use_instead, extend)

    def run(args):
        try:
            return lint(*args)
        except Exception as exc:  # kept for the test that needs this result
            return exc

    return {key: run(args) for key, args in jobs.items()}


def result(linted, code: str, block: str) -> list[tuple[str, int]]:
    found = linted[(code, block)]
    if isinstance(found, Exception):
        raise found
    return found


@pytest.mark.needs_engine
@pytest.mark.parametrize("code", STATIC_CODES)
def test_example_triggers_its_code(linted, code):
    findings = result(linted, code, "example")
    assert code in {c for c, _ in findings}, f"{code}: the Example gives {findings}"


@pytest.mark.needs_engine
@pytest.mark.parametrize("code", STATIC_CODES)
def test_use_instead_does_not_trigger_its_code(linted, code):
    findings = result(linted, code, "use")
    assert code not in {c for c, _ in findings}, f"{code}: the Use-instead block gives {findings}"


@pytest.mark.needs_engine
@pytest.mark.parametrize("code", ALL_CODES)
def test_examples_trigger_no_other_code(linted, code):
    """One problem per page: no other rule fires on the Example, none on the fix."""
    own = {code} if RULES[code].static else set()
    example = [f for f in result(linted, code, "example") if f[0] not in own]
    use_instead = result(linted, code, "use")
    assert not example, f"{code}: the Example also gives {example}"
    assert not use_instead, f"{code}: the Use-instead block gives {use_instead}"


def test_explain_prints_the_fix_safety_section(tmp_path):
    result = run_cli("--explain", "agl201", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (RULES_DIR / "AGL201.md").read_text(encoding="utf-8")
    assert "\n## Fix safety\n`--fix --unsafe-fixes` turns" in result.stdout
    assert result.stdout.index("## Use instead") < result.stdout.index("## Fix safety") < result.stdout.index(
        "## When it stays silent")
