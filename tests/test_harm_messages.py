"""Error findings say their harm, and the harm decides the code (issue: "error severity means a
concrete harm"). Runs the real CLI on the rule fixtures and on small sources written here."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO_ROOT, run_cli


def _findings(*args: str, cwd: Path = REPO_ROOT) -> list[dict]:
    process = run_cli("--format", "json", "--no-cache", *args, cwd=cwd)
    assert process.returncode in (0, 1), process.stderr
    return json.loads(process.stdout)["findings"]


def _by_line(findings: list[dict], code: str) -> dict[int, str]:
    return {f["line"]: f["message"] for f in findings if f["code"] == code}


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def test_agl201_names_the_cycle_for_an_output_and_the_silent_corruption_for_an_input():
    bad = REPO_ROOT / "fixtures" / "AGL201" / "bad.py"
    messages = _by_line(_findings("fixtures/AGL201/bad.py"), "AGL201")
    assert "reference cycle" in messages[_line_of(bad, "ctx.out = out  #")]
    assert "view of forward's output" in messages[_line_of(bad, "ctx.flat = out.view(-1)")]
    assert "receives a gradient" in messages[_line_of(bad, "ctx.x = x  #")]
    assert "whose values backward reads" in messages[_line_of(bad, "ctx.tensors = (None, B)  #")]
    assert "shares the storage of forward's output" in messages[_line_of(bad, "ctx.out = out.detach()")]
    # forward's output returned through the attribute itself (PyTorch issues 5569, 25340)
    returned = messages[_line_of(bad, "ctx.out = x.clone()  #")]
    assert "forward's output" in returned and "reference cycle" in returned and "memory grows" in returned
    assert all("silently corrupts the gradient" in m or "reference cycle" in m for m in messages.values())


def test_agl207_is_opt_in_and_names_the_hooks(tmp_path: Path):
    source = tmp_path / "ops.py"
    source.write_text(
        "import torch\n\n\n"
        "class SiLU(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        sig = torch.sigmoid(x)\n"
        "        ctx.sig = sig\n"
        "        ctx.x = x\n"
        "        ctx.save_for_backward(x)\n"
        "        return x * sig\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        (x,) = ctx.saved_tensors\n"
        "        return g * ctx.sig * (1 + x * (1 - ctx.sig))\n"
    )
    assert _findings("ops.py", cwd=tmp_path) == []
    found = _findings("--extend-select", "AGL207", "ops.py", cwd=tmp_path)
    # ctx.x is also saved: it gets nothing; the private sigmoid is AGL207 only
    assert [(f["code"], f["line"]) for f in found] == [("AGL207", 8)]
    assert found[0]["severity"] == "warning"
    assert "saved-tensor hooks" in found[0]["message"] and "torch.func" in found[0]["message"]


def test_agl302_says_whose_tensor_changes_and_spares_a_private_buffer():
    findings = _findings("fixtures/AGL302")
    bad = {f["line"]: f["message"] for f in findings if f["code"] == "AGL302" and f["path"].endswith("bad.py")}
    assert bad and all("which is forward" in m and "caller holds" in m for m in bad.values())
    assert not [f for f in findings if f["path"].endswith("good.py")]


def test_agl201_leaves_constants_and_unread_inputs_to_agl207():
    """An input whose gradient is None on every return (a frozen or quantized weight), one that
    backward never reads (an element unpacked to `_A`) or reads only for its shape
    (`torch.zeros_like`): no in-place change reaches the gradient, so AGL207 (opt-in) has them."""
    bad = REPO_ROOT / "fixtures" / "AGL207" / "bad.py"
    assert [f for f in _findings("fixtures/AGL207/bad.py") if f["code"] == "AGL201"] == []
    agl207 = _by_line(_findings("--select", "AGL207", "fixtures/AGL207/bad.py"), "AGL207")
    for text in ("ctx.weight = weight  #", "ctx.tensors = (None, B)  #", "ctx.tensors = (A.shape[0], A)", "ctx.A = A  #"):
        assert _line_of(bad, text) in agl207, text


DATA_WRITE_ON_INPUT = (
    "import torch\n\n\n"
    "class Assign(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, scratch, value):\n"
    "        scratch.data[0] = value\n"
    "        return scratch\n\n"
    "    @staticmethod\n"
    "    def backward(ctx, grad):\n"
    "        return grad, grad[0]\n"
)


def test_a_data_write_on_an_input_is_one_finding_and_one_noqa_covers_it(tmp_path: Path):
    """AGL303 reports the write and says it is unseen by the version counter; AGL304 would say
    the same of the same line, so it stays quiet there unless AGL303 is off."""
    source = tmp_path / "assign.py"
    source.write_text(DATA_WRITE_ON_INPUT)
    found = _findings("assign.py", cwd=tmp_path)
    assert [(f["code"], f["line"], f["severity"]) for f in found] == [("AGL303", 7, "error")]
    assert "through .data (unseen by the version counter)" in found[0]["message"]
    alone = _findings("--ignore", "AGL303", "assign.py", cwd=tmp_path)
    assert [(f["code"], f["line"], f["severity"]) for f in alone] == [("AGL304", 7, "error")]
    source.write_text(DATA_WRITE_ON_INPUT.replace("= value\n", "= value  # noqa: AGL303\n"))
    assert _findings("--extend-select", "AGL001", "assign.py", cwd=tmp_path) == []



WRITE_AND_RETURN = (
    "import torch\n\n\n"
    "class Scale(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, x):\n"
    "        x.mul_(2)\n"
    "        return x\n\n"
    "    @staticmethod\n"
    "    def backward(ctx, grad):\n"
    "        return grad * 2\n"
)


def test_agl303_reads_every_caller_in_the_project_for_write_and_return(tmp_path: Path):
    """`x.mul_(2); return x` is harmless when every caller rebinds its name to the result, and
    a silent wrong gradient when one keeps using the tensor it passed, in any file."""
    (tmp_path / "ops.py").write_text(WRITE_AND_RETURN)
    (tmp_path / "model.py").write_text("from ops import Scale\n\n\ndef f(x):\n    x = Scale.apply(x)\n    return x\n")
    assert _findings(".", cwd=tmp_path) == []
    (tmp_path / "other.py").write_text("from ops import Scale\n\n\ndef g(x):\n    y = Scale.apply(x)\n    return x * y\n")
    found = _findings(".", cwd=tmp_path)
    assert [(f["code"], Path(f["path"]).name, f["line"]) for f in found] == [("AGL303", "ops.py", 7)]


UNCHECKED_ASSIGN = (
    "import torch\n\n\n"
    "class UncheckedAssign(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, scratch, value, index):\n"
    "        ctx.index = index\n"
    "        scratch.data[index] = value\n"
    "        return scratch\n\n"
    "    @staticmethod\n"
    "    def backward(ctx, grad):\n"
    "        return grad, grad[ctx.index], None\n"
)


def test_agl304_grades_a_data_write_into_a_rebound_scratch_by_what_the_callers_do(tmp_path: Path):
    """torchdiffeq's `_UncheckedAssign`: a warning while every caller rebinds the scratch (only
    an overlapping view a caller saved earlier is harmed); AGL303's error once one caller keeps
    using the tensor it passed; an error when forward also keeps the scratch for backward."""
    (tmp_path / "ops.py").write_text(UNCHECKED_ASSIGN)
    (tmp_path / "step.py").write_text(
        "from ops import UncheckedAssign\n\n\n"
        "def step(k, values):\n"
        "    for i, v in enumerate(values):\n"
        "        k = UncheckedAssign.apply(k, v, (..., i))\n"
        "    return k\n")
    found = _findings(".", cwd=tmp_path)
    assert [(f["code"], f["line"], f["severity"]) for f in found] == [("AGL304", 8, "warning")]
    assert "every caller rebinds" in found[0]["message"]
    assert "saved scratch or a view of it before the call silently reads the new values" in found[0]["message"]

    (tmp_path / "ops.py").write_text(UNCHECKED_ASSIGN.replace(
        "        ctx.index = index\n", "        ctx.index = index\n        ctx.save_for_backward(scratch)\n"))
    found = _findings(".", cwd=tmp_path)
    assert [(f["code"], f["line"], f["severity"]) for f in found] == [("AGL304", 9, "error")]

    (tmp_path / "ops.py").write_text(UNCHECKED_ASSIGN)
    (tmp_path / "other.py").write_text(
        "from ops import UncheckedAssign\n\n\n"
        "def keep(k, v):\n"
        "    out = UncheckedAssign.apply(k, v, 0)\n"
        "    return k * out\n")
    found = _findings(".", cwd=tmp_path)
    assert [(f["code"], f["line"], f["severity"]) for f in found] == [("AGL303", 8, "error")]


INSTANCE_STYLE = (
    "import torch\n\n\n"
    "class Scale(torch.autograd.Function):\n"
    "    def __init__(self, factor):\n"
    "        self.factor = factor\n\n"
    "    def forward(self, x):\n"
    "        return x * self.factor\n\n"
    "    def backward(self, grad):\n"
    "        return grad * self.factor\n"
)


def test_agl103_is_an_error_for_a_function_written_to_be_instantiated(tmp_path: Path):
    """State set in __init__ and read by forward/backward: the class cannot run on PyTorch
    >= 0.4, one error on forward; AGL206 does not call `self.factor` unset; --fix does not add
    @staticmethod, which would not make it run. Without __init__ state, the usual warnings."""
    source = tmp_path / "scale.py"
    source.write_text(INSTANCE_STYLE)
    found = _findings("--extend-select", "AGL206", "scale.py", cwd=tmp_path)
    assert [(f["code"], f["line"], f["severity"]) for f in found] == [("AGL103", 8, "error")]
    assert "reads self.factor, which __init__ sets" in found[0]["message"]
    assert "AttributeError" in found[0]["message"]
    run_cli("--fix", "scale.py", cwd=tmp_path)
    assert source.read_text() == INSTANCE_STYLE

    source.write_text(INSTANCE_STYLE.replace("    def __init__(self, factor):\n        self.factor = factor\n\n", "")
                      .replace("self.factor", "2"))
    found = _findings("scale.py", cwd=tmp_path)
    assert [(f["code"], f["severity"]) for f in found] == [("AGL103", "warning"), ("AGL103", "warning")]


def test_agl308_names_the_torch_nn_module_that_makes_the_parameter_trainable():
    """The parameter passed is a torch.nn module's (issue 28: a published QAT linear subclasses
    nn.Linear and passes the inherited self.bias): the message says which, and where."""
    bad = REPO_ROOT / "fixtures" / "AGL308" / "nn_modules.py"
    messages = _by_line(_findings("fixtures/AGL308/nn_modules.py"), "AGL308")
    inherited = messages[_line_of(bad, "return grad_output @ q, grad_w, None")]
    assert "self.bias, the trainable bias that QATLinear inherits from torch.nn.Linear" in inherited
    local = messages[_line_of(bad, "(grad_output * x).sum(0), None")]
    assert "lin.bias, the trainable bias that torch.nn.Linear(...) makes" in local
    assert all("never trains" in m for m in messages.values()) and len(messages) == 5
