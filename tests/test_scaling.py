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


def test_fixing_parses_and_places_each_class_once_per_text(tmp_path: Path, monkeypatch) -> None:
    """``--diff`` lints the file, fixes it in rounds and lints each new text alone (issue 30: it
    cost 3-4x the lint on 1,000 classes; bench/fix_cost.py times it). Its libcst work is
    counted, not timed: each class is parsed, and its positions computed, once for the
    original text and once for the fixed one (the run's lint and the first round share the
    first; the lint after the round and the round after it, the second), and the whole module
    twice at most for positions (the lint's fix_available pass, the round that fixes).
    Before: four times each, and the whole module parsed by a round that fixed nothing."""
    import libcst
    from libcst.metadata import MetadataWrapper

    from conftest import run_in_process

    classes = 20
    path = tmp_path / "many.py"
    path.write_text("import torch\n" + "".join(CLASS.format(i=i) for i in range(classes)))
    counts = {"parse_module": 0, "resolve": 0}
    parse_module, resolve = libcst.parse_module, MetadataWrapper.resolve

    def counted_parse(*args, **kwargs):
        counts["parse_module"] += 1
        return parse_module(*args, **kwargs)

    def counted_resolve(self, *args, **kwargs):
        counts["resolve"] += 1
        return resolve(self, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", counted_parse)
    monkeypatch.setattr(MetadataWrapper, "resolve", counted_resolve)
    result = run_in_process("--no-cache", "-j1", "--diff", "--unsafe-fixes", path.name, cwd=tmp_path)
    assert result.returncode == 1 and f"Would fix {classes} findings." in result.stderr, result.stderr
    # Each class: twice (two texts). The whole module: the fix_available pass, the round that
    # fixes, and the check that its result parses.
    assert counts["parse_module"] <= 2 * classes + 3, counts
    assert counts["resolve"] <= 2 * classes + 2, counts
