"""``--dynamic --device cuda|auto`` (AGL904): skipped cleanly on a machine without a GPU.

With a GPU, three things must hold: the planted CPU-only backward is caught (AGL904); correct
code, every rule's ``good.py`` and the dynamic fixtures, raises no AGL904 (a precision bug of
ours otherwise: gradcheck's tolerances or our input recipes going wrong on another device); and
the confirmation of static findings reaches the same verdicts on CUDA as on the CPU.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from test_dynamic import DYNAMIC, run

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CONFIRM = DYNAMIC / "confirm"


@pytest.mark.parametrize("device", ["cuda", "auto"])
def test_backward_that_builds_a_cpu_tensor_fails_on_cuda_only(tmp_path, device):
    result = run("--dynamic", "--device", device, "--no-cache", "--format", "json",
                 str(DYNAMIC / "cuda_only.py"), cwd=tmp_path)
    findings = json.loads(result.stdout)["findings"]
    cuda_only = {f["function_class"]: f for f in findings if f["code"] == "AGL904"}
    assert set(cuda_only) == {"ReLUCpuZeros"}, result.stdout + result.stderr
    assert cuda_only["ReLUCpuZeros"]["message"].startswith("ReLUCpuZeros: passes on CPU, fails on CUDA")
    # Nothing fails on the CPU: not an AGL901/AGL903.
    assert not [f for f in findings if f["code"] in ("AGL901", "AGL903")]


def lint_on(device: str, paths: list[str], report: Path) -> tuple[list[dict], dict]:
    result = run("--dynamic", "--device", device, "--no-cache", "--format", "json", "--select", "ALL",
                 "--dynamic-report", str(report), *paths, timeout=1800)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"], json.loads(report.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def correct_code_on_cuda(tmp_path_factory):
    paths = sorted(str(path.relative_to(REPO_ROOT)) for path in REPO_ROOT.glob("fixtures/AGL*/good.py"))
    paths.append(str((DYNAMIC / "correct_twins.py").relative_to(REPO_ROOT)))
    return lint_on("cuda", paths, tmp_path_factory.mktemp("cuda") / "report.json")


def test_correct_code_passes_on_cuda_as_on_the_cpu(correct_code_on_cuda):
    findings, report = correct_code_on_cuda
    assert [f for f in findings if f["code"] == "AGL904"] == []
    ran_on_cuda = [entry for entry in report["functions"] if "cuda" in entry.get("ran", ())]
    assert len(ran_on_cuda) >= 10, report["functions"]  # the checks really ran on the GPU


@pytest.fixture(scope="module")
def confirm_on_cuda(tmp_path_factory):
    findings, _ = lint_on("cuda", [str(CONFIRM.relative_to(REPO_ROOT))],
                          tmp_path_factory.mktemp("confirm-cuda") / "report.json")
    by_file: dict[str, list[dict]] = {}
    for finding in findings:
        by_file.setdefault(Path(finding["path"]).name, []).append(finding)
    return by_file


def confirmable_codes() -> list[str]:
    return sorted({re.sub(r"_(confirmed|near_miss)\.py$", "", path.name) for path in CONFIRM.glob("AGL*.py")})


@pytest.mark.parametrize("code", confirmable_codes())
def test_confirmation_reaches_the_cpu_verdicts_on_cuda(confirm_on_cuda, code):
    confirmed = [f for f in confirm_on_cuda.get(f"{code}_confirmed.py", []) if f["code"] == code]
    assert confirmed and {f["confirmation"] for f in confirmed} == {"confirmed"}, confirmed
    near_miss = [f for f in confirm_on_cuda.get(f"{code}_near_miss.py", []) if f["code"] == code]
    assert {f["confirmation"] for f in near_miss} <= {"not-reproduced"}, near_miss
    assert not [f for f in confirm_on_cuda.get(f"{code}_near_miss.py", []) if f["code"] == "AGL904"]
