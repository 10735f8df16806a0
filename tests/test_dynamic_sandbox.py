"""``--dynamic-sandbox``: the children that run the user's code cannot write outside their scratch
directory, reach the network or read the runner's secrets; the run goes on and names what was stopped.

The real CLI, real children, over a copy of fixtures/dynamic/sandbox/ (the hostile modules write
next to themselves when not stopped): one module writes into the linted tree, one into the home
directory, one connects to a listener of this test on 127.0.0.1, one fails its import when it sees
AGL_TEST_SECRET, set in the runner's environment; scratch_on_path.py fails its import if a folder of
the child's scratch directory (where it runs) imports as a package; wrong.py is a plain module whose AGL901 must be
the same with the sandbox on or off. Nothing here hangs: every child gets a wide limit (300 s).
"""

from __future__ import annotations

import errno
import json
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import REPO_ROOT, assert_no_traceback, run_cli

pytest.importorskip("torch")

from autograd_lint.dynamic.sandbox import landlock_abi, missing_for_require  # noqa: E402

MISSING = missing_for_require()
LIMIT = "300"  # seconds per child: nothing here hangs, and each takes a second or a few
FIXTURES = REPO_ROOT / "fixtures" / "dynamic" / "sandbox"
HOSTILE = {  # module -> the start of its reason under the sandbox
    "writes_tree.py": "blocked by the sandbox: write to ",
    "writes_home.py": "blocked by the sandbox: write to ",
    "connects.py": "blocked by the sandbox: network connect to 127.0.0.1:",
}
WRITTEN = "written_at_import.txt"


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it gets."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.5)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping:
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> int:
        self.stopping = True
        self.thread.join()
        self.server.close()
        return self.connections


def sandboxed_run(tmp_path: Path, mode: str, fork_server: str = "1"):
    """The run over a fresh copy of the fixtures: (result, findings, report, listener's connections)."""
    tree, home = tmp_path / "tree", tmp_path / "home"
    shutil.copytree(FIXTURES, tree)
    home.mkdir()
    listener = Listener()
    report_path = tmp_path / "report.json"
    try:
        result = run_cli("--dynamic", "--dynamic-sandbox", mode, "--dynamic-timeout", LIMIT, "--exit-zero",
                         "--format", "json", "--no-cache", "-j", "2", "--dynamic-report", str(report_path),
                         "--dynamic-env", "AGL_TEST_WRITE_TREE", "--dynamic-env", "AGL_TEST_HOME",
                         "--dynamic-env", "AGL_TEST_PORT", str(tree), cwd=tmp_path, timeout=1800,
                         env={"AUTOGRAD_LINT_DYNAMIC_FORK_SERVER": fork_server, "HOME": str(home),
                              "AGL_TEST_WRITE_TREE": "1", "AGL_TEST_HOME": str(home),
                              "AGL_TEST_PORT": str(listener.port), "AGL_TEST_SECRET": "hunter2"})
    finally:
        connections = listener.close()
    assert_no_traceback(result)
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return result, json.loads(result.stdout)["findings"], report, connections


def entries_by_module(report: dict) -> dict[str, dict[str, dict]]:
    modules: dict[str, dict[str, dict]] = {}
    for entry in report["functions"]:
        modules.setdefault(Path(entry["path"]).name, {})[entry["function_class"]] = entry
    return modules


def findings_of(findings: list[dict], module: str) -> list[tuple[str, str, int]]:
    return sorted((f["function_class"] or "", f["code"], f["line"]) for f in findings if Path(f["path"]).name == module)


@pytest.fixture(scope="module")
def unsandboxed(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("off")
    return tmp_path, sandboxed_run(tmp_path, "off")


@pytest.mark.skipif(bool(MISSING), reason=f"this kernel lacks what --dynamic-sandbox require needs: {MISSING}")
@pytest.mark.parametrize("fork_server", ["1", "0"], ids=["fork-server", "one-interpreter-each"])
def test_the_sandbox_stops_and_names_each_hostile_module(tmp_path, unsandboxed, fork_server):
    result, findings, report, connections = sandboxed_run(tmp_path, "require", fork_server)
    assert result.returncode == 0, result.stderr
    modules = entries_by_module(report)
    for module, reason in HOSTILE.items():
        entry = modules[module]["Double"]
        assert entry["status"] == "sandbox-blocked" and entry["reason"].startswith(reason), entry
        assert reason in result.stderr  # named on stderr too, with the other classes not checked
    assert f"write to {tmp_path / 'tree' / WRITTEN} denied" in modules["writes_tree.py"]["Double"]["reason"]
    assert f"write to {tmp_path / 'home' / WRITTEN} denied" in modules["writes_home.py"]["Double"]["reason"]
    assert not (tmp_path / "tree" / WRITTEN).exists() and not (tmp_path / "home" / WRITTEN).exists()
    assert connections == 0
    # The secret never reached the module: its import went through, its class was checked.
    assert modules["reads_secret.py"]["Double"]["status"] == "checked"
    assert modules["wrong.py"]["Triple"]["status"] == modules["wrong.py"]["Double"]["status"] == "checked"
    assert modules["scratch_on_path.py"]["Double"]["status"] == "checked"  # no cache folder imports
    sandbox = report["summary"]["sandbox"]
    assert sandbox["mode"] == "require" and sandbox["network"] and sandbox["filesystem"], sandbox
    assert "sandbox require: no network (" in result.stderr and "writes only to scratch (" in result.stderr
    assert report["summary"]["not_checked"]["sandbox-blocked"] == 3

    # The rest of the run's findings, against the same run with the sandbox off.
    _, (_, off_findings, off_report, _) = unsandboxed
    assert findings_of(findings, "wrong.py") == findings_of(off_findings, "wrong.py") != []
    assert entries_by_module(off_report)["wrong.py"]["Triple"]["runtime_findings"] == ["AGL901"]


def test_without_the_sandbox_the_hostile_modules_do_what_they_try(unsandboxed):
    """What the test above checks is stopped is really attempted: with --dynamic-sandbox off the
    writes land, the listener is reached, and the secret reaches the module."""
    tmp_path, (result, _, report, connections) = unsandboxed
    assert (tmp_path / "tree" / WRITTEN).exists() and (tmp_path / "home" / WRITTEN).exists()
    assert connections == 1
    modules = entries_by_module(report)
    secret = modules["reads_secret.py"]["Double"]
    assert secret["status"] == "import-failed" and "AGL_TEST_SECRET reached the module" in secret["reason"], secret
    assert all(modules[module]["Double"]["status"] == "checked" for module in HOSTILE)
    assert modules["scratch_on_path.py"]["Double"]["status"] == "checked", modules["scratch_on_path.py"]
    assert report["summary"]["sandbox"]["mode"] == "off"
    assert "sandbox: off" in result.stderr


def test_require_refuses_to_run_where_a_protection_is_missing(tmp_path, monkeypatch):
    """Where the kernel lacks Landlock (pretended here: ABI 0, no namespace), ``require`` exits 2
    with one line that says what is missing, before any child runs."""
    from autograd_lint.dynamic import sandbox

    monkeypatch.setattr(sandbox, "landlock_abi", lambda: 0)
    monkeypatch.setattr(sandbox, "_namespace_possible", lambda: False)
    assert sandbox.missing_for_require() == [
        "filesystem (Landlock is not available in this kernel)",
        "network (no network namespace, and Landlock ABI < 4 has no TCP rules)"]
    from autograd_lint.cli import main

    code = main(["--dynamic", "--dynamic-sandbox", "require", "--no-cache", str(FIXTURES / "wrong.py")])
    assert code == 2


def test_the_children_get_an_environment_stripped_to_what_torch_needs():
    from autograd_lint.dynamic.runner import kept_environment

    environment = {"PATH": "/usr/bin", "LC_ALL": "C", "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "0",
                   "GITHUB_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "x", "TORCH_HUB_TOKEN": "x", "MY_SETTING": "x",
                   "HOME": "/home/user"}
    assert sorted(kept_environment(environment)) == ["CUDA_VISIBLE_DEVICES", "LC_ALL", "OMP_NUM_THREADS", "PATH"]
    assert "MY_SETTING" in kept_environment(environment, ["MY_SETTING"])


@pytest.mark.skipif(landlock_abi() < 4, reason="Landlock's TCP rules need ABI 4 (Linux 6.7)")
def test_without_a_network_namespace_landlock_denies_tcp(tmp_path):
    """The fallback where the kernel refuses namespaces: Landlock's TCP rules, in a process of its own."""
    program = f"""
import socket
from autograd_lint.dynamic import sandbox
sandbox._network_namespace = lambda libc: ""  # as where unshare is refused
print(sandbox.enter({str(tmp_path)!r}, "require")["network"])
try:
    socket.create_connection(("127.0.0.1", 9), timeout=30)
except OSError as error:
    print(type(error).__name__, error.errno, sandbox.blocked(error))
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                            cwd=REPO_ROOT)
    assert result.stdout.splitlines() == [
        "Landlock TCP rules (TCP only)",
        f"PermissionError {errno.EACCES} blocked by the sandbox: network connect to 127.0.0.1:9 denied"], result.stderr


def test_the_config_key_is_checked(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.autograd-lint.dynamic]\nsandbox = "sometimes"\n', encoding="utf-8")
    shutil.copy(FIXTURES / "wrong.py", tmp_path / "wrong.py")
    result = run_cli("--dynamic", "--no-cache", "wrong.py", cwd=tmp_path, timeout=600)
    assert result.returncode == 2 and "sandbox must be one of auto, require, off; got 'sometimes'" in result.stderr
