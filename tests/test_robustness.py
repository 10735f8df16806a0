"""Valid but extreme code never turns into an internal error (issue 3)."""

from __future__ import annotations

import subprocess
import sys

import pytest

TEMPLATE = """\
import torch


class Deep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = {expression}
        ctx.y = y
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad
"""


@pytest.mark.parametrize("terms", [900, 2900, 6000])
def test_deeply_nested_expressions(tmp_path, terms):
    """900 and 2,900 terms are analysed (ctx.y is found); 6,000 exceed Python's own parser."""
    path = tmp_path / "deep.py"
    path.write_text(TEMPLATE.format(expression=" + ".join(["x"] * terms)))
    process = subprocess.run([sys.executable, "-m", "autograd_lint", "--no-cache", str(path)],
                             capture_output=True, text=True, timeout=120)
    assert process.returncode == 1, process.stderr
    assert "Traceback" not in process.stderr and "internal error" not in process.stderr
    assert ("AGL000" if terms > 3000 else "AGL201") in process.stdout
