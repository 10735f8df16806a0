"""Runs the real CLI over every fixture directory and compares its findings with the markers.

Each ``fixtures/<CODE>/`` holds ``bad.py`` (cases of the rule), ``good.py`` (near-misses that must
stay silent) and sometimes helper files (call sites, a base class, gradcheck tests). A line where a
finding is expected ends with ``# expect: AGL201`` (or ``# expect: AGL201, AGL304``). The directory is
linted as a whole with the default rules plus its own code, and the set of (file, line, code)
reported must equal the set of markers: nothing missing, nothing extra.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autograd_lint.catalogue import RULES
from conftest import REPO_ROOT as ROOT
from conftest import run_cli

FIXTURES = ROOT / "fixtures"
FIXTURE_DIRS = sorted(p for p in FIXTURES.glob("AGL*") if p.is_dir())  # not fixtures/realistic
MARKER = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")
STATIC_CODES = sorted(code for code, info in RULES.items() if info.static)


def source_lines(path: Path) -> list[str]:
    """The file's lines as Python numbers them (\n, \r\n or \r). Markers are ASCII, so decode
    leniently: latin-1, BOM and unparsable fixtures read too."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def source_files(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.py"))


def markers_in(path: Path, directory: Path) -> set[tuple[str, int, str]]:
    rel = path.relative_to(directory).as_posix()
    found = set()
    for lineno, line in enumerate(source_lines(path), start=1):
        match = MARKER.search(line)
        if match:
            for code in match.group(1).split(","):
                if code.strip():
                    found.add((rel, lineno, code.strip()))
    return found


def expected_findings(directory: Path) -> set[tuple[str, int, str]]:
    expected: set[tuple[str, int, str]] = set()
    for path in source_files(directory):
        expected |= markers_in(path, directory)
    return expected


def lint(code: str, directory: Path):
    """The real CLI over the whole directory, as a user types it (relative path, from the root).

    No `--no-cache`, as a user runs it: the cache (`.autograd_lint_cache/` at the root) keys a
    file's result by its bytes, the project-wide facts and the selection, and is stamped with the
    linter's own source files, so an edit of a fixture or of the linter is never answered from a
    stale entry (tests/test_names.py compares cached and `--no-cache` runs)."""
    return run_cli("--format", "json", "--extend-select", code, directory.relative_to(ROOT).as_posix(), cwd=ROOT)


def relative_to_fixture(path: str, directory: Path) -> str:
    p = Path(path)
    if not p.is_absolute():
        p = ROOT / p
    try:
        return p.resolve().relative_to(directory.resolve()).as_posix()
    except ValueError:
        return path


def source_line(directory: Path, rel: str, lineno: int) -> str:
    path = directory / rel
    if not path.is_file():
        return "<no such file>"
    lines = source_lines(path)
    return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else "<no such line>"


def describe(directory: Path, items: set[tuple[str, int, str]], messages: dict) -> str:
    out = []
    for rel, lineno, code in sorted(items):
        msg = messages.get((rel, lineno, code))
        out.append(f"  {rel}:{lineno}: {code}" + (f" ({msg})" if msg else ""))
        out.append(f"      | {source_line(directory, rel, lineno)}")
    return "\n".join(out)


@pytest.mark.parametrize("directory", FIXTURE_DIRS, ids=[p.name for p in FIXTURE_DIRS])
def test_fixture_findings_match_markers(directory: Path) -> None:
    code = directory.name
    expected = expected_findings(directory)
    proc = lint(code, directory)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"`autograd-lint --format json` did not print JSON for {directory.name} "
            f"(exit {proc.returncode}).\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}",
            pytrace=False,
        )

    found: set[tuple[str, int, str]] = set()
    messages: dict[tuple[str, int, str], str] = {}
    for finding in report["findings"]:
        key = (relative_to_fixture(finding["path"], directory), finding["line"], finding["code"])
        found.add(key)
        messages[key] = finding.get("message", "")

    missing = expected - found
    unexpected = found - expected
    if missing or unexpected:
        parts = [f"{directory.name}: findings differ from the `# expect:` markers"]
        if missing:
            parts.append(f"missing (false negatives), {len(missing)}:\n" + describe(directory, missing, messages))
        if unexpected:
            parts.append(
                f"unexpected (false positives), {len(unexpected)}:\n" + describe(directory, unexpected, messages)
            )
        if proc.stderr.strip():
            parts.append("stderr:\n" + proc.stderr[-3000:])
        pytest.fail("\n".join(parts), pytrace=False)

    want_rc = 1 if expected else 0
    assert proc.returncode == want_rc, (
        f"exit code {proc.returncode}, expected {want_rc}\nstderr:\n{proc.stderr[-3000:]}"
    )


def test_every_static_rule_has_fixtures() -> None:
    """Every static code has bad.py (with a marker of that code) and good.py; markers are sane."""
    problems = []
    for code in STATIC_CODES:
        directory = FIXTURES / code
        bad, good = directory / "bad.py", directory / "good.py"
        if not bad.is_file() or not good.is_file():
            problems.append(f"{code}: fixtures/{code}/bad.py and good.py are required")
            continue
        if not any(c == code for _, _, c in markers_in(bad, directory)):
            problems.append(f"{code}: bad.py has no `# expect: {code}` marker")
        if markers_in(good, directory):
            problems.append(f"{code}: good.py must not contain markers")

    for directory in FIXTURE_DIRS:
        if directory.name not in RULES:
            problems.append(f"{directory.name}: not a code in the catalogue")
            continue
        for rel, lineno, c in sorted(expected_findings(directory)):
            info = RULES.get(c)
            if info is None or not info.static:
                problems.append(f"{directory.name}/{rel}:{lineno}: unknown or non-static code {c}")
            elif not info.default_enabled and c != directory.name:
                problems.append(f"{directory.name}/{rel}:{lineno}: {c} is off by default and not selected here")
        for path in source_files(directory):
            if any(code == "AGL000" for _, _, code in markers_in(path, directory)):
                continue  # meant not to parse (the marker sits where Python places the error)
            try:
                compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
            except SyntaxError as exc:
                problems.append(f"{path.relative_to(ROOT)}:{exc.lineno}: not valid Python: {exc.msg}")

    assert not problems, "\n".join(problems)
