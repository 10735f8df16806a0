"""bench/ecosystem.py's comparison, summary and report, on small hand-made result files.

The ecosystem check itself downloads packages and never runs in CI; what it does with its
results is tested here, through the real command line (`compare`, `summary`, `report --write`)
and the module behind it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import ecosystem  # noqa: E402  (bench/ is not a package)
import ecosystem_compare  # noqa: E402

SHADOW = "BaseType() instantiates a Function class: call BaseType.apply(...) instead"
CHAIN = "backward returns a gradient without reading grad: multiply by the incoming gradient (chain rule)"
GUARD = "backward computes every gradient: guard each with ctx.needs_input_grad"


def finding(path: str, line: int, code: str, message: str, severity: str = "error") -> dict:
    return {"path": path, "line": line, "column": 1, "code": code, "name": "", "severity": severity,
            "message": message, "function_class": "F", "method": "backward"}


def result(commit: str, **packages: list[dict]) -> dict:
    return {"autograd_lint": {"commit": commit, "dirty": False, "version": "0.1.0"},
            "options": {"select": None},
            "packages": {name: {"version": "1.0", "paths": [name], "findings": findings}
                         for name, findings in packages.items()}}


BEFORE = result(
    "a" * 40,
    torch=[finding("torchgen/model.py", 10, "AGL104", SHADOW), finding("torchgen/model.py", 20, "AGL104", SHADOW),
           finding("torch/x.py", 5, "AGL108", CHAIN)],
    mmcv=[finding("mmcv/ops/a.py", 7, "AGL401", GUARD, "warning")],
)
AFTER = result(
    "b" * 40,
    torch=[finding("torchgen/model.py", 20, "AGL104", SHADOW),  # the one at line 10 is gone
           finding("torch/x.py", 9, "AGL108", CHAIN)],  # moved: same file, code and message
    mmcv=[finding("mmcv/ops/a.py", 7, "AGL401", GUARD, "warning"),
          finding("mmcv/ops/b.py", 3, "AGL201", "ctx.x holds a tensor | pipe")],  # new
    kornia=[finding("kornia/k.py", 1, "AGL101", "only in the second result")],  # not linted before
)


def write(tmp_path: Path, name: str, data: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / "ecosystem.py"), *args],
                          capture_output=True, text=True, timeout=60)


def test_compare_sorts_findings_into_new_gone_and_moved():
    comparison = ecosystem_compare.compare(BEFORE, AFTER)
    assert [(f.package, f.path, f.line, f.code) for f in comparison.new] == [("mmcv", "mmcv/ops/b.py", 3, "AGL201")]
    assert [(f.path, f.line) for f in comparison.gone] == [("torchgen/model.py", 10)]
    assert [(a.line, b.line, a.code) for a, b in comparison.moved] == [(5, 9, "AGL108")]
    # kornia was linted only in the second result: a package added to the list is not a change.
    assert comparison.not_compared == {"kornia": "linted after only"}
    assert comparison.counts("code") == {"AGL104": {"new": 0, "gone": 1, "moved": 0},
                                         "AGL108": {"new": 0, "gone": 0, "moved": 1},
                                         "AGL201": {"new": 1, "gone": 0, "moved": 0}}
    assert comparison.counts("package") == {"mmcv": {"new": 1, "gone": 0, "moved": 0},
                                            "torch": {"new": 0, "gone": 1, "moved": 1}}


def test_a_result_compared_with_itself_is_unchanged():
    assert ecosystem_compare.compare(BEFORE, BEFORE).unchanged
    assert "no change" in ecosystem_compare.format_comparison(ecosystem_compare.compare(AFTER, AFTER))


def test_a_package_on_which_the_cli_failed_is_not_compared():
    failed = json.loads(json.dumps(AFTER))
    failed["packages"]["torch"].update(exit_status=2, findings=[])
    comparison = ecosystem_compare.compare(BEFORE, failed)
    assert comparison.gone == [] and comparison.moved == []  # torch's findings are not "gone"
    assert comparison.not_compared["torch"] == "the CLI failed after (exit status 2)"
    assert "not compared: torch (the CLI failed after (exit status 2))" in ecosystem_compare.format_comparison(comparison)


def test_same_identity_several_times_pairs_exact_lines_first():
    before = result("a", p=[finding("f.py", line, "AGL104", SHADOW) for line in (10, 20, 30)])
    after = result("b", p=[finding("f.py", line, "AGL104", SHADOW) for line in (20, 31)])
    comparison = ecosystem_compare.compare(before, after)
    assert [(a.line, b.line) for a, b in comparison.moved] == [(10, 31)]
    assert [f.line for f in comparison.gone] == [30] and comparison.new == []


def test_compare_command_prints_the_changes_per_code_and_package(tmp_path: Path):
    process = run_cli("compare", str(write(tmp_path, "a.json", BEFORE)), str(write(tmp_path, "b.json", AFTER)))
    assert process.returncode == 0, process.stderr
    out = process.stdout
    assert out.splitlines()[0].endswith(": 1 new, 1 gone, 1 moved")
    assert "| AGL104 | +0 | -1 | ~0 |" in out and "| torch | +0 | -1 | ~1 |" in out
    assert "+ mmcv mmcv/ops/b.py:3 AGL201 [error]" in out
    assert "- torch torchgen/model.py:10 AGL104 [error]" in out
    assert "~ torch torch/x.py:5 -> 9 AGL108" in out


def test_summary_counts_per_code_severity_and_package(tmp_path: Path):
    assert ecosystem_compare.summary(AFTER) == {
        "AGL101": {"error": {"kornia": 1}}, "AGL104": {"error": {"torch": 1}}, "AGL108": {"error": {"torch": 1}},
        "AGL201": {"error": {"mmcv": 1}}, "AGL401": {"warning": {"mmcv": 1}}}
    process = run_cli("summary", str(write(tmp_path, "b.json", AFTER)))
    assert process.returncode == 0, process.stderr
    assert "| AGL401 | warning | 1 |  | 1 |  |" in process.stdout  # columns: kornia, mmcv, torch
    assert "5 findings in 3 packages" in process.stdout


def test_report_keeps_verdicts_of_findings_still_reported_at_any_line(tmp_path: Path):
    markdown = tmp_path / "findings.md"
    process = run_cli("report", str(write(tmp_path, "a.json", BEFORE)), "--write", str(markdown))
    assert process.returncode == 0, process.stderr
    first = markdown.read_text()
    assert "| mmcv |" not in first.split("## Other severities")[1].split("## AGL")[1]  # warnings get no row
    assert "| AGL401 | warning | 1 | mmcv 1 |" in first
    # A person fills in the verdicts and a note.
    judged = (first
              .replace(f"| torch | `torchgen/model.py:10` | {SHADOW} |  |",
                       f"| torch | `torchgen/model.py:10` | {SHADOW} | false: torchgen's own Type |")
              .replace(f"| torch | `torchgen/model.py:20` | {SHADOW} |  |",
                       f"| torch | `torchgen/model.py:20` | {SHADOW} | false: again |")
              .replace(f"| torch | `torch/x.py:5` | {CHAIN} |  |",
                       f"| torch | `torch/x.py:5` | {CHAIN} | real \\| a test helper |")
              .replace(ecosystem_compare.NOTES_END, "AGL401 counts are fine.\n" + ecosystem_compare.NOTES_END))
    assert judged != first
    markdown.write_text(judged)

    process = run_cli("report", str(write(tmp_path, "b.json", AFTER)), "--write", str(markdown))
    assert process.returncode == 0, process.stderr
    second = markdown.read_text()
    # Line 20 is still reported: its own verdict, not that of the gone line 10.
    assert f"| torch | `torchgen/model.py:20` | {SHADOW} | false: again |" in second
    assert "torchgen/model.py:10" not in second
    # Moved from line 5 to 9: the verdict follows it (a pipe in a cell stays escaped).
    assert f"| torch | `torch/x.py:9` | {CHAIN} | real \\| a test helper |" in second
    # New: no verdict yet; a pipe in the message is escaped so the table keeps its columns.
    assert "| mmcv | `mmcv/ops/b.py:3` | ctx.x holds a tensor \\| pipe |  |" in second
    assert "AGL401 counts are fine." in second
    assert "| AGL104 | 1 | 0 | 0 | 1 | 0 |" in second  # code, errors, real, harmless, false, not judged
    assert "| all | 4 | 1 | 0 | 1 | 2 |" in second


def test_verdicts_read_back_exactly_what_was_written():
    findings = ecosystem_compare.findings_of(AFTER, severity="error")
    markdown = ecosystem_compare.render_report(AFTER)
    for number, f in enumerate(findings):
        markdown = markdown.replace(f"| {f.package} | `{f.path}:{f.line}` | {ecosystem_compare._escape(f.message)} |  |",
                                    f"| {f.package} | `{f.path}:{f.line}` | {ecosystem_compare._escape(f.message)} | harmless here: {number} |")
    again = ecosystem_compare.render_report(AFTER, markdown)
    assert again.split("## AGL", 1)[1] == markdown.split("## AGL", 1)[1]  # every row as it was
    assert "| all | 4 | 0 | 4 | 0 | 0 |" in again  # the totals now count the verdicts
    assert ecosystem_compare.render_report(AFTER, again) == again
    assert ecosystem_compare.assign_verdicts(findings, ecosystem_compare.read_verdicts(again)) == {
        f: f"harmless here: {number}" for number, f in enumerate(findings)}


def test_a_verdict_survives_a_reworded_message_at_the_same_line_only():
    known = {("torch", "torchgen/model.py", "AGL104", "old wording"): [(10, "false: torchgen's Type")],
             ("torch", "torch/x.py", "AGL108", "old wording"): [(5, "real")]}
    reworded = [ecosystem_compare.Finding("torch", "torchgen/model.py", 10, "AGL104", "error", "new wording"),
                ecosystem_compare.Finding("torch", "torch/x.py", 6, "AGL108", "error", "new wording")]
    assert list(ecosystem_compare.assign_verdicts(reworded, known).values()) == ["false: torchgen's Type", ""]


@pytest.mark.parametrize("cell, kind", [("real", "real"), ("Real: leaks the graph", "real"),
                                        ("harmless here: frozen weight", "harmless here"),
                                        ("false — torchgen's Type", "false"), ("", None), ("really?", None)])
def test_verdict_kind(cell: str, kind):
    assert ecosystem_compare.verdict_kind(cell) == kind


def test_package_list_parses_pins_and_paths(tmp_path: Path):
    listing = tmp_path / "packages.txt"
    listing.write_text("# comment\ntorch==2.13.0 paths=torch,torchgen\n\nentmax==1.3  # trailing\n")
    assert ecosystem.read_packages(listing) == [ecosystem.Package("torch", "2.13.0", ("torch", "torchgen")),
                                                ecosystem.Package("entmax", "1.3", ())]
    with pytest.raises(SystemExit):
        listing.write_text("torch>=2\n")
        ecosystem.read_packages(listing)


def test_the_pinned_list_pins_every_package_of_the_issue():
    names = {p.name for p in ecosystem.read_packages(ecosystem.PACKAGES_FILE)}
    assert {"torch", "transformers", "timm", "fairscale", "entmax", "xformers", "mmcv", "pyro-ppl", "gpytorch",
            "peft", "speechbrain", "monai", "torch_geometric", "botorch", "torchdiffeq", "pypose", "kornia"} <= names


def test_archives_in_the_cache_are_found_by_normalised_name_and_version(tmp_path: Path):
    for name in ("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", "pyro_ppl-1.9.2-py3-none-any.whl",
                 "mmcv-2.2.0.tar.gz", "mmcv-2.1.0-py3-none-any.whl"):
        (tmp_path / name).write_bytes(b"")
    assert ecosystem.find_archive(tmp_path, ecosystem.Package("torch", "2.13.0", ())).name.startswith("torch-2.13.0+cpu")
    assert ecosystem.find_archive(tmp_path, ecosystem.Package("pyro-ppl", "1.9.2", ())).name.startswith("pyro_ppl")
    assert ecosystem.find_archive(tmp_path, ecosystem.Package("mmcv", "2.2.0", ())).name == "mmcv-2.2.0.tar.gz"
    assert ecosystem.find_archive(tmp_path, ecosystem.Package("timm", "1.0.31", ())) is None


def counted(data: dict, **classes: int) -> dict:
    """`data` with the CLI's summary (its Function-class count) for the packages named."""
    data = json.loads(json.dumps(data))
    for name, count in classes.items():
        data["packages"][name]["summary"] = {"files": 3, "function_classes": count}
    return data


def test_a_package_with_no_function_class_is_named_and_one_without_a_count_too():
    data = counted(AFTER, torch=12, mmcv=0)  # kornia: no summary (the CLI failed, or an old result)
    problems = ecosystem_compare.packages_without_function_classes(data)
    assert len(problems) == 2
    assert problems[0].startswith("kornia==1.0: the CLI reported no Function-class count")
    assert problems[1] == "mmcv==1.0 yields no Function class (linted mmcv): give the right paths= or drop it from the list"
    assert ecosystem_compare.packages_without_function_classes(counted(AFTER, torch=12, mmcv=1, kornia=2)) == []


def test_summary_and_report_show_the_function_classes_of_each_package(tmp_path: Path):
    data = counted(AFTER, torch=12, mmcv=0, kornia=2)
    process = run_cli("summary", str(write(tmp_path, "b.json", data)))
    assert process.returncode == 0, process.stderr
    assert ("kornia 1.0 (2 Function classes), mmcv 1.0 (0 Function classes), torch 1.0 (12 Function classes)"
            in process.stdout)
    process = run_cli("report", str(write(tmp_path, "b.json", data)))
    assert process.returncode == 0, process.stderr
    assert "3 packages, 14 Function classes:" in process.stdout
    # package, version, Function classes, errors, other findings
    assert "| mmcv | 1.0 | 0 | 1 | 1 |" in process.stdout and "| torch | 1.0 | 12 | 2 | 0 |" in process.stdout
    process = run_cli("report", str(write(tmp_path, "a.json", BEFORE)))  # no summary kept: "?", not 0
    assert "| torch | 1.0 | ? | 3 | 0 |" in process.stdout


def _wheel(downloads: Path, name: str, files: dict[str, str]) -> None:
    import zipfile
    downloads.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(downloads / f"{name}-1.0-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


FUNCTION = ("import torch\n\n\nclass Double(torch.autograd.Function):\n    @staticmethod\n"
            "    def forward(ctx, x):\n        return x * 2\n\n    @staticmethod\n"
            "    def backward(ctx, grad):\n        return grad * 2\n")


def test_run_fails_loudly_on_a_package_that_yields_no_function_class(tmp_path: Path):
    # The archives are already in the cache, so `run` downloads nothing: it lints them with the CLI.
    cache = tmp_path / "cache"
    _wheel(cache / "downloads", "withfunction", {"withfunction/__init__.py": FUNCTION})
    _wheel(cache / "downloads", "metapackage", {"metapackage/__init__.py": "", "metapackage-1.0.dist-info/METADATA": ""})
    listing = tmp_path / "packages.txt"
    listing.write_text("withfunction==1.0\nmetapackage==1.0\n")
    out = tmp_path / "result.json"
    process = run_cli("run", "--packages", str(listing), "--cache-dir", str(cache), "--out", str(out))
    assert process.returncode == 1, process.stdout + process.stderr
    assert process.stderr.strip().splitlines() == [
        "ecosystem.py: error: metapackage==1.0 yields no Function class (linted metapackage): "
        "give the right paths= or drop it from the list"]
    assert "withfunction 1.0: 1 Function classes" in process.stdout
    saved = json.loads(out.read_text())  # written all the same, to be read
    assert ecosystem_compare.function_classes(saved["packages"]["withfunction"]) == 1
    assert ecosystem_compare.function_classes(saved["packages"]["metapackage"]) == 0

    listing.write_text("withfunction==1.0\n")
    process = run_cli("run", "--packages", str(listing), "--cache-dir", str(cache), "--out", str(out))
    assert process.returncode == 0, process.stdout + process.stderr
