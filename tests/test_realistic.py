"""The realistic fixtures: multi-Function modules written like published code.

``fixtures/realistic/clean_*.py`` are correct code modelled on mature projects (PyTorch itself,
timm, flash-attn, xformers, kornia, mmcv, botorch, entmax, Megatron-LM): the default rules must
find nothing in them. ``buggy_*.py`` mix correct Functions with the bugs reported upstream; every
expected finding is marked on the line the rule pages (rules/) say it points to::

    ctx.mask = x > 0  # expect: AGL201
    return (  # expect: AGL101, AGL108      (several codes on one line)

The real CLI is run over the directory, as a user would, and the set of (file, line, code) it
reports must equal the set of markers exactly: a missing finding and an extra one both fail.
"""

from __future__ import annotations

import collections
import json
import re
import tokenize
from pathlib import Path

import pytest

from autograd_lint.catalogue import RULES
from conftest import REPO_ROOT, run_cli

FIXTURES = REPO_ROOT / "fixtures" / "realistic"
FIXTURES_ARG = "fixtures/realistic"  # relative, as a user types it; run from REPO_ROOT

MARKER = re.compile(r"#\s*expect\s*:\s*(?P<codes>[^#]*)$")
CODE = re.compile(r"^AGL\d{3}$")

Key = tuple[str, int, str]  # (file name, line, code)

# Function classes defined in the fixtures (counted at runtime by patching FunctionMeta while
# importing every module; includes subclasses of project base classes, InplaceFunction
# subclasses, @classmethod styles and the classes nested in factory functions).
FUNCTION_CLASSES = {
    "buggy_attention.py": 6,
    "buggy_kernels.py": 10,
    "buggy_legacy.py": 5,
    "buggy_ops.py": 7,
    "clean_activations.py": 7,
    "clean_attention.py": 6,
    "clean_geometry.py": 5,
    "clean_misc_ops.py": 9,
    "clean_quant_ste.py": 8,
    "clean_torch_nn.py": 7,
}


def fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("*.py"))


def markers(path: Path) -> dict[int, list[str]]:
    """``{line: [codes]}`` from the ``# expect:`` comments of one file (real comments only,
    found with tokenize, so the text inside a string never counts)."""
    found: dict[int, list[str]] = {}
    with path.open("rb") as handle:
        for token in tokenize.tokenize(handle.readline):
            if token.type != tokenize.COMMENT:
                continue
            match = MARKER.search(token.string)
            if match is None:
                continue
            codes = [code.strip() for code in match["codes"].split(",")]
            found.setdefault(token.start[0], []).extend(codes)
    return found


def expected_findings() -> set[Key]:
    return {
        (path.name, line, code)
        for path in fixture_files()
        for line, codes in markers(path).items()
        for code in codes
    }


def source_line(name: str, line: int) -> str:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else "<no such line>"


def describe(keys: set[Key], messages: dict[Key, str] | None = None) -> str:
    rows = []
    for name, line, code in sorted(keys):
        row = f"  {name}:{line}: {code}"
        if messages and (name, line, code) in messages:
            row += f" {messages[(name, line, code)]}"
        rows.append(f"{row}\n      | {source_line(name, line)}")
    return "\n".join(rows)


# --------------------------------------------------------------------------------------------
# The markers themselves (no analysis needed)
# --------------------------------------------------------------------------------------------


def test_fixture_set_is_complete():
    names = [path.name for path in fixture_files()]
    clean = [n for n in names if n.startswith("clean_")]
    buggy = [n for n in names if n.startswith("buggy_")]
    assert 4 <= len(clean) <= 6, clean
    assert 3 <= len(buggy) <= 4, buggy
    assert "buggy_ops.py" in buggy  # the README's quick start lints it
    assert sorted(clean + buggy) == sorted(names), "every fixture is clean_*.py or buggy_*.py"
    assert sorted(FUNCTION_CLASSES) == sorted(names), "update FUNCTION_CLASSES with the fixtures"


def test_markers_name_default_static_rules():
    for path in fixture_files():
        for line, codes in markers(path).items():
            for code in codes:
                where = f"{path.name}:{line}: {code!r}"
                assert CODE.match(code), f"{where}: not a rule code (write '# expect: AGL201, AGL304')"
                assert code in RULES, f"{where}: unknown code"
                assert RULES[code].static, f"{where}: runtime codes cannot be expected statically"
                assert RULES[code].default_enabled, f"{where}: off by default, the run would not report it"
            assert len(codes) == len(set(codes)), f"{path.name}:{line}: code repeated"


def test_clean_fixtures_have_no_markers_and_buggy_ones_do():
    for path in fixture_files():
        count = sum(len(codes) for codes in markers(path).values())
        if path.name.startswith("clean_"):
            assert count == 0, f"{path.name} is meant to be clean but expects {count} findings"
        else:
            assert count > 0, f"{path.name} expects no finding"


def test_quick_start_showcase_is_short_and_varied():
    codes = [code for codes in markers(FIXTURES / "buggy_ops.py").values() for code in codes]
    assert 5 <= len(codes) <= 8, codes
    assert len(set(codes)) >= 5, codes


# --------------------------------------------------------------------------------------------
# The real CLI over the directory
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_run():
    result = run_cli("--format", "json", FIXTURES_ARG, cwd=REPO_ROOT)
    assert result.returncode in (0, 1), (
        f"exit status {result.returncode} (2 = usage or internal error)\n"
        f"stderr:\n{result.stderr}\nstdout:\n{result.stdout[:2000]}"
    )
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError as error:
        pytest.fail(f"stdout is not JSON ({error}):\n{result.stdout[:2000]}\nstderr:\n{result.stderr}")
    return result, report


def reported(report: dict) -> tuple[list[Key], dict[Key, str]]:
    keys: list[Key] = []
    messages: dict[Key, str] = {}
    for finding in report["findings"]:
        path = Path(finding["path"])
        assert (REPO_ROOT / path).resolve().parent == FIXTURES.resolve(), finding["path"]
        key = (path.name, finding["line"], finding["code"])
        keys.append(key)
        messages[key] = finding.get("message", "")
    return keys, messages


@pytest.mark.needs_engine
def test_cli_reports_exactly_the_marked_findings(cli_run):
    result, report = cli_run
    keys, messages = reported(report)
    actual = set(keys)
    expected = expected_findings()

    false_positives = actual - expected
    false_negatives = expected - actual
    if false_positives or false_negatives:
        parts = [
            f"{len(actual & expected)} of {len(expected)} expected findings reported, "
            f"{len(false_positives)} unexpected."
        ]
        if false_positives:
            parts.append("FALSE POSITIVES (reported, not marked):\n" + describe(false_positives, messages))
        if false_negatives:
            parts.append("FALSE NEGATIVES (marked, not reported):\n" + describe(false_negatives))
        if result.stderr.strip():
            parts.append("stderr:\n" + result.stderr)
        pytest.fail("\n\n".join(parts), pytrace=False)

    assert result.returncode == (1 if expected else 0), result.stderr


@pytest.mark.needs_engine
def test_cli_reports_each_finding_once(cli_run):
    _, report = cli_run
    keys, messages = reported(report)
    duplicates = {key for key, count in collections.Counter(keys).items() if count > 1}
    assert not duplicates, "reported more than once:\n" + describe(duplicates, messages)


@pytest.mark.needs_engine
def test_cli_summary_counts_the_fixtures(cli_run):
    result, report = cli_run
    summary = report["summary"]
    assert summary["files"] == len(fixture_files()), summary
    assert summary["files_with_functions"] == len(fixture_files()), summary
    assert summary["function_classes"] == sum(FUNCTION_CLASSES.values()), summary
    assert summary["findings"] == len(report["findings"]), summary
    assert "internal error" not in result.stderr.lower(), result.stderr
