"""``--dynamic --device cuda|auto`` (AGL904): skipped cleanly on a machine without a GPU."""

from __future__ import annotations

import json

import pytest

from test_dynamic import DYNAMIC, run

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


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
