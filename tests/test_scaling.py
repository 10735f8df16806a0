"""Cost grows linearly with the number of Function classes in one file.

Every class below gets an AGL201 finding with a fix, the path that once walked the whole module
for each finding (1,000 classes took 43 s, 200 took under 2). CPU time of the CLI process is
compared, not wall time, so a busy machine does not decide the result."""

from __future__ import annotations

import resource
from pathlib import Path

from conftest import run_cli

CLASS = '''
class Scale{i}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.x
'''


def _cpu_seconds_of_lint(path: Path, classes: int) -> float:
    path.write_text("import torch\n" + "".join(CLASS.format(i=i) for i in range(classes)))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run_cli("--no-cache", "--jobs", "1", "--statistics", str(path), cwd=path.parent, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert result.returncode == 1, result.stderr
    assert f"{classes}  AGL201" in result.stdout, result.stdout
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_ten_times_the_classes_costs_at_most_fifteen_times_the_cpu(tmp_path: Path) -> None:
    small = _cpu_seconds_of_lint(tmp_path / "small.py", 200)
    large = _cpu_seconds_of_lint(tmp_path / "large.py", 2000)
    assert large <= 15 * small, f"200 classes: {small:.2f} s of CPU, 2,000 classes: {large:.2f} s"
