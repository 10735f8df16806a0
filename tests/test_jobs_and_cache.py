"""Parallel and cached runs give exactly the findings of a serial, cold run (issue 3).

The tree is the fixtures copied three times (well over the engine's parallel threshold, so
`--jobs 2` really uses worker processes), linted with the real CLI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograd_lint.engine import PARALLEL_THRESHOLD

REPO = Path(__file__).resolve().parents[1]


def lint(tree: Path, *options: str) -> tuple[int, list]:
    process = subprocess.run(
        [sys.executable, "-m", "autograd_lint", "--format", "json", "--select", "ALL", *options, "."],
        cwd=tree, capture_output=True, text=True, timeout=300,
    )
    assert "Traceback" not in process.stderr, process.stderr
    assert process.returncode in (0, 1), process.stderr
    findings = json.loads(process.stdout)["findings"]
    return process.returncode, sorted((f["path"], f["line"], f["column"], f["code"], f["message"]) for f in findings)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    # One copy of the fixtures is already over the parallel threshold twice (three copies made the
    # two tests that use this tree a sixth of the suite's time, and showed nothing one copy does not).
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(REPO / "fixtures", root / "a")
    assert sum(1 for _ in root.rglob("*.py")) >= 2 * PARALLEL_THRESHOLD
    return root


def test_serial_parallel_cold_and_warm_agree(tree: Path):
    serial = lint(tree, "--no-cache", "--jobs", "1")
    assert serial[1], "the fixtures must produce findings"
    cache = tree / "cache"
    assert lint(tree, "--cache-dir", str(cache), "--jobs", "2") == serial  # parallel and cold: fills the cache
    assert (cache / ".gitignore").read_text().strip().endswith("*")
    assert lint(tree, "--cache-dir", str(cache), "--jobs", "2") == serial  # warm
    assert lint(tree, "--cache-dir", str(cache), "--jobs", "1") == serial  # warm, serial


def test_cache_sees_changed_files_and_project_wide_facts(tmp_path: Path):
    """A changed file is linted again; a change in another file that alters the project facts
    (here: a base class gains the ctx attribute a subclass reads) changes the subclass's result."""
    base = tmp_path / "base.py"
    sub = tmp_path / "sub.py"
    base.write_text(
        "import torch\n\n\nclass Base(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return x * 2\n"
    )
    sub.write_text(
        "from base import Base\n\n\nclass Sub(Base):\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return grad * ctx.scale\n"
    )
    # AGL502 aside: Sub inherits base.py's forward, and no gradcheck reaches it.
    cache = ["--cache-dir", str(tmp_path / "cache"), "--ignore", "AGL502"]
    _, first = lint(tmp_path, *cache)
    assert [f[3] for f in first] == ["AGL206"]
    base.write_text(base.read_text().replace("return x * 2", "ctx.scale = 2.0\n        return x * 2"))
    assert lint(tmp_path, *cache)[1] == []
    sub.write_text(sub.read_text().replace("ctx.scale", "ctx.factor"))
    _, last = lint(tmp_path, *cache)
    assert [(f[0], f[3]) for f in last] == [("./sub.py", "AGL206")]


def test_no_cache_writes_nothing(tmp_path: Path):
    (tmp_path / "m.py").write_text("import torch\n")
    lint(tmp_path, "--no-cache")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_a_corrupt_cache_is_ignored(tmp_path: Path):
    (tmp_path / "m.py").write_text("import torch\nclass F(torch.autograd.Function):\n    pass\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "cache-v1.pickle").write_bytes(b"not a pickle")
    code, findings = lint(tmp_path, "--cache-dir", str(cache))
    assert code == 0 and findings == []


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    """A few fixture directories: a tree with findings of several codes, quick to lint cold."""
    root = tmp_path / "tree"
    for name in ("AGL101", "AGL201", "AGL301", "AGL502"):
        shutil.copytree(REPO / "fixtures" / name, root / name)
    return root


def test_the_same_run_again_is_answered_from_the_run_memo_alone(small_tree: Path, tmp_path: Path):
    """An unchanged tree linted again with the same selection gets the last run's result
    without the per-file layers (here made unreadable); any other run reads those layers."""
    tree, cache = small_tree, tmp_path / "cache"
    everything = lint(tree, "--cache-dir", str(cache))
    assert (cache / "runs-v1.pickle").exists()
    (cache / "cache-v1.pickle").write_bytes(b"not a pickle")
    assert lint(tree, "--cache-dir", str(cache)) == everything
    # Another selection is another run: linted again (the broken per-file layer is ignored).
    assert lint(tree, "--cache-dir", str(cache), "--select", "AGL1") == lint(tree, "--no-cache", "--select", "AGL1")
    assert lint(tree, "--cache-dir", str(cache)) == everything  # the first run is still kept


def test_a_run_memo_sees_a_changed_file_and_a_corrupt_one_is_ignored(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text("import torch\n\n\nclass F(torch.autograd.Function):\n    @staticmethod\n"
                      "    def forward(ctx, x):\n        return x * 2\n\n    @staticmethod\n"
                      "    def backward(ctx, g):\n        return g * 2\n")
    cache = tmp_path / "cache"

    def codes() -> list[str]:
        return sorted(f[3] for f in lint(tmp_path, "--cache-dir", str(cache))[1])

    assert codes() == ["AGL502", "AGL605"]  # nothing gradchecks F; forward takes ctx
    module.write_text(module.read_text().replace("return g * 2", "return g * 2, g"))
    assert codes() == ["AGL101", "AGL502", "AGL605"]
    (cache / "runs-v1.pickle").write_bytes(b"not a pickle")
    assert codes() == ["AGL101", "AGL502", "AGL605"]


_LOADING_SCRIPT = """
import json, sys
from functools import partial
from autograd_lint.parallel import WorkerPool
from autograd_lint.pipeline import Pipeline, load_the_analysis

def has_libcst(state, payloads):
    return ["libcst" in sys.modules for _ in payloads]

paths = sys.argv[1:]
before = "libcst" in sys.modules
pool = WorkerPool(2, len(paths), partial(Pipeline, None), preload=load_the_analysis)
try:
    costs = {i: 5_000.0 for i in range(len(paths))}  # 4 files a batch: several batches
    summaries = pool.summarize_while_loading(Pipeline.summarize, list(enumerate(paths)), costs)
    workers = pool.run(has_libcst, [(0, "x"), (1, "y")], {})
finally:
    pool.close()
serial = Pipeline(None).summarize(paths)
print(json.dumps({"before": before, "after": "libcst" in sys.modules, "workers": list(workers.values()),
                  "same": [summaries[i] for i in range(len(paths))] == serial}))
"""


def _forty_modules(directory: Path) -> list[str]:
    paths = []
    for number in range(40):
        path = directory / f"m{number}.py"
        path.write_text(f"import torch\nvalue = {number}\n" * (number + 1))
        paths.append(str(path))
    return paths


def test_the_workers_get_the_parser_from_this_process_and_the_summaries_are_all_there(tmp_path: Path):
    """A parallel run loads libcst once, in the main process, while a helper forked before it
    reads the files; the workers forked after it have libcst without importing it."""
    paths = _forty_modules(tmp_path)
    process = subprocess.run([sys.executable, "-c", _LOADING_SCRIPT, *paths], capture_output=True, text=True,
                             timeout=120, cwd=REPO)
    assert process.returncode == 0, process.stderr
    assert json.loads(process.stdout) == {"before": False, "after": True, "workers": [True, True], "same": True}


_DYING_HELPER_SCRIPT = """
import json, os, sys
from functools import partial
from autograd_lint.parallel import WorkerPool
from autograd_lint.pipeline import Pipeline, load_the_analysis

def dies_in_the_helper(state, paths):
    if "libcst" not in sys.modules and any(path.endswith("m3.py") for path in paths):
        os._exit(7)  # the helper, forked before the parser loads, dies on its 4th file
    return state.summarize(paths)

paths = sys.argv[1:]
pool = WorkerPool(2, len(paths), partial(Pipeline, None), preload=load_the_analysis)
try:
    summaries = pool.summarize_while_loading(dies_in_the_helper, list(enumerate(paths)),
                                             {i: 2_000.0 for i in range(len(paths))})
finally:
    pool.close()
print(json.dumps([summaries[i] for i in range(len(paths))] == Pipeline(None).summarize(paths)))
"""


def test_the_files_a_dead_helper_took_are_summarised_by_the_workers(tmp_path: Path):
    paths = _forty_modules(tmp_path)
    process = subprocess.run([sys.executable, "-c", _DYING_HELPER_SCRIPT, *paths], capture_output=True, text=True,
                             timeout=120, cwd=REPO)
    assert process.returncode == 0, process.stderr
    assert process.stdout.strip() == "true"


def _whose(state, payloads, shared):
    import os

    return [(os.getpid(), payload, shared) for payload in payloads]


def test_a_worker_that_runs_out_takes_files_from_another():
    """Sharing out a step's files: every file is answered exactly once, and a worker whose own
    files are done takes the lightest ones left to another (here: it owns none)."""
    from autograd_lint.parallel import WorkerPool

    pool = WorkerPool(2, 10, dict)
    try:
        pool.owners = {index: 0 for index in range(10)}
        answers = pool.run(_whose, [(i, f"file{i}") for i in range(10)],
                           {i: 30_000.0 for i in range(10)}, "the project")
    finally:
        pool.close()
    assert sorted(answers) == list(range(10))
    assert all(payload == f"file{i}" and shared == "the project" for i, (_, payload, shared) in answers.items())
    assert len({pid for pid, _, _ in answers.values()}) == 2
    # The worker that answered for a file owns it now (it keeps its syntax tree for the lint).
    pid_of_worker = {pool.owners[i]: pid for i, (pid, _, _) in answers.items()}
    assert len(pid_of_worker) == 2 and all(pid_of_worker[pool.owners[i]] == pid for i, (pid, _, _) in answers.items())


def test_the_content_hash_is_computed_only_for_the_cache(tmp_path: Path):
    from autograd_lint.cache import content_hash
    from autograd_lint.pipeline import Pipeline

    module = tmp_path / "m.py"
    module.write_text("import torch\n")
    (with_cache,) = Pipeline(None).summarize([str(module)])
    (without,) = Pipeline(None, hashing=False).summarize([str(module)])
    assert with_cache.digest == content_hash(module.read_bytes())
    assert without.digest is None and without.summary == with_cache.summary
