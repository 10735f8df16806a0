"""How fast `autograd-lint server` answers an edit, and how much memory it holds, on a file of
the installed torch package (issue 31's bar: warm, a diagnostic within 100 ms of a change;
memory under 300 MB on torch).

    python bench/server_latency.py [--file torch/utils/checkpoint.py] [--edits 30] [--fresh-cache]

It starts the server of this interpreter (``python -m autograd_lint server``) over stdio and
speaks raw JSON-RPC to it, as an editor would: initialize with the torch package directory as
the workspace root, open the file (the cold time: didOpen sent -> its first publishDiagnostics
received), then make ``--edits`` small edits (a comment line added at the end, then taken
away, and so on), each a full-text didChange, timed from the didChange sent to the
publishDiagnostics of that version received. The server lints a change at once unless it
linted the buffer less than ``MIN_INTERVAL_SECONDS`` before; the edits are that far apart
(``--pause``), as an edit after a quiet spell. The table also gives the server's CPU time per
edit (/proc/PID/stat: on a shared machine, wall times grow with the
other work, CPU times much less). The server process's peak resident memory is its ``VmHWM``
(/proc/PID/status), at the end.

Where the file lies decides its project (README: Projects). ``--where installed`` opens the
installed file in place: with a ``.venv`` inside a git clone (this repository's), its project
is that repository, not torch. ``--where copy`` (the default) copies the torch package's Python
files to a temporary directory outside any repository first, where the project is the torch
package itself (its 2,300 files): the case the issue's bar is about. The server runs in a
fresh temporary directory, so its cache (``.autograd_lint_cache``, where the project's facts
are kept) starts empty: the cold time includes gathering them. Not a test: nothing here
asserts a time.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from autograd_lint.server.language_server import MIN_INTERVAL_SECONDS  # noqa: E402

TIMEOUT_S = 120.0


class RawClient:
    """JSON-RPC over the server's stdin/stdout (``Content-Length`` framing). A reader thread
    keeps each publishDiagnostics with the moment it arrived, and answers the server's requests
    (registerCapability, ...) with null."""

    def __init__(self, command: list[str], cwd: str, stderr) -> None:
        self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=stderr)
        self.published: list[tuple[float, dict]] = []  # (perf_counter, params)
        self.responses: dict[int, dict] = {}
        self.changed = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> float:
        """Send a notification; the moment it was written."""
        self._send({"method": method, "params": params})
        return time.perf_counter()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        number = self.next_id
        self._send({"id": number, "method": method, "params": params})
        with self.changed:
            if not self.changed.wait_for(lambda: number in self.responses, TIMEOUT_S):
                raise TimeoutError(method)
            return self.responses.pop(number)

    def wait_for_publication(self, uri: str, version: int) -> tuple[float, dict]:
        def found():
            return next(((at, p) for at, p in self.published if p["uri"] == uri and p.get("version") == version), None)

        with self.changed:
            if not self.changed.wait_for(lambda: found() is not None, TIMEOUT_S):
                raise TimeoutError(f"no diagnostics for version {version} of {uri}")
            return found()

    def _read(self) -> None:
        out = self.process.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(out.read(length))
            arrived = time.perf_counter()
            if message.get("method") == "textDocument/publishDiagnostics":
                with self.changed:
                    self.published.append((arrived, message["params"]))
                    self.changed.notify_all()
            elif "method" in message and "id" in message:  # a request of the server's
                self._send({"id": message["id"], "result": None})
            elif "id" in message:
                with self.changed:
                    self.responses[message["id"]] = message
                    self.changed.notify_all()


def memory_mb(pid: int) -> dict[str, float]:
    """VmHWM (peak resident) and VmRSS of the process, in MB."""
    found = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmHWM", "VmRSS"):
                found[name] = int(value.split()[0]) / 1024
    return found


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process has used (/proc/PID/stat), in seconds: what an edit
    costs the server, less sensitive than wall time to other work on a shared machine."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", default="torch/utils/checkpoint.py",
                        help="a file of the installed torch package, from its parent directory")
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--pause", type=float, default=MIN_INTERVAL_SECONDS + 0.05,
                        help="seconds between an answer and the next edit (default: the server's interval, and 50 ms)")
    parser.add_argument("--where", choices=("copy", "installed"), default="copy",
                        help="open the installed file in place, or a copy of the torch package outside any "
                             "repository (default)")
    parser.add_argument("--log", help="write the server's stderr to this file")
    parser.add_argument("--profile", help="run the server under cProfile, its statistics written to this file")
    options = parser.parse_args()

    spec = importlib.util.find_spec("torch")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        print("torch is not installed in this environment", file=sys.stderr)
        return 2
    torch_dir = Path(spec.submodule_search_locations[0])
    scratch = Path(tempfile.mkdtemp(prefix="server-latency-"))
    try:
        if options.where == "copy":
            copy = scratch / "packages" / "torch"
            shutil.copytree(torch_dir, copy, ignore=_not_python)
            torch_dir = copy
        (scratch / "cwd").mkdir()
        return _measure(options, torch_dir, scratch / "cwd")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _not_python(directory: str, names: list[str]) -> list[str]:
    """For ``copytree``: everything but directories and Python files."""
    return [n for n in names if not n.endswith((".py", ".pyi")) and not os.path.isdir(os.path.join(directory, n))]


def _measure(options, torch_dir: Path, cwd: Path) -> int:
    path = torch_dir.parent / options.file
    text = path.read_text(encoding="utf-8")
    uri = path.as_uri()

    log = open(options.log, "wb") if options.log else subprocess.DEVNULL
    # Not started in torch's directory (its modules types.py, random.py would shadow the
    # stdlib's): in an empty one, where the cache starts empty.
    profile = ["-m", "cProfile", "-o", os.path.abspath(options.profile)] if options.profile else []
    client = RawClient([sys.executable, *profile, "-m", "autograd_lint", "server"], str(cwd), log)
    started = time.perf_counter()
    client.request("initialize", {"processId": os.getpid(), "rootUri": torch_dir.as_uri(),
                                  "capabilities": {}})
    client.notify("initialized", {})
    initialized = time.perf_counter() - started
    sent = client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}})
    arrived, first = client.wait_for_publication(uri, 1)
    cold = arrived - sent

    latencies = []
    cpu_before = cpu_seconds(client.process.pid)
    for version in range(2, options.edits + 2):
        edited = text + "# an edit\n" if version % 2 == 0 else text
        sent = client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": edited}]})
        arrived, _ = client.wait_for_publication(uri, version)
        latencies.append(arrived - sent)
        time.sleep(options.pause)
    cpu_per_edit = (cpu_seconds(client.process.pid) - cpu_before) / len(latencies)
    # The protocol's own cost: a request the server answers without linting (a hover where no
    # diagnostic is, on the text it has linted), sent and answered.
    round_trips = []
    for _ in range(10):
        sent = time.perf_counter()
        client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
        round_trips.append(time.perf_counter() - sent)
    memory = memory_mb(client.process.pid)
    client.request("shutdown", {})
    client.notify("exit", {})
    client.process.wait(30)

    ms = lambda seconds: f"{seconds * 1000:8.1f}"  # noqa: E731
    print(f"autograd-lint server on {options.file} ({len(text.splitlines())} lines, "
          f"{len(first['diagnostics'])} diagnostics), workspace root {torch_dir} ({options.where})")
    print(f"{'':42}{'ms':>8}")
    print(f"{'initialize (start to initialized)':42}{ms(initialized)}")
    print(f"{'cold: didOpen -> first diagnostics':42}{ms(cold)}")
    print(f"{f'warm edit, {len(latencies)} edits, median':42}{ms(statistics.median(latencies))}")
    print(f"{'warm edit, p90':42}{ms(percentile(latencies, 0.9))}")
    print(f"{'warm edit, max':42}{ms(max(latencies))}")
    print(f"{'server CPU time per edit (user+system)':42}{ms(cpu_per_edit)}")
    print(f"{'a request without a lint, round trip':42}{ms(statistics.median(round_trips))}")
    print(f"{'server peak memory (VmHWM), MB':42}{memory['VmHWM']:8.1f}   now (VmRSS) {memory['VmRSS']:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
