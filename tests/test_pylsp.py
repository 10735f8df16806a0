"""A real editor client: python-lsp-server (pylsp) with its flake8 plugin shows our findings.

The test speaks the Language Server Protocol over pylsp's stdio as an editor does (JSON-RPC
messages framed by ``Content-Length`` headers): initialize, turn flake8 on (pycodestyle and
pyflakes off) through ``workspace/didChangeConfiguration``, open a buggy file, and wait for
``textDocument/publishDiagnostics``. pylsp runs flake8 on the unsaved text (``flake8 -``), so
this is the path every keystroke-and-save takes in an editor.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Optional

import pytest

from conftest import BUGGY_SOURCE, REPO_ROOT

TIMEOUT_S = 60


class LanguageServer:
    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pylsp"], cwd=cwd, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.messages: "queue.Queue[Optional[dict]]" = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        try:
            while True:
                headers = {}
                while (line := stream.readline().decode("ascii")) not in ("\r\n", ""):
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                if not headers:
                    break  # end of stream
                self.messages.put(json.loads(stream.read(int(headers["content-length"]))))
        finally:
            self.messages.put(None)

    def send(self, method: str, params: dict, request: bool = False) -> Optional[int]:
        message: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            message["id"], self.next_id = self.next_id, self.next_id + 1
        body = json.dumps(message).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return message.get("id")

    def wait_for(self, matches, what: str) -> dict:
        deadline = time.monotonic() + TIMEOUT_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                break
            if message is None:
                pytest.fail(f"pylsp exited while waiting for {what}: {self.process.stderr.read().decode()[-2000:]}")
            if matches(message):
                return message
        pytest.fail(f"no {what} from pylsp within {TIMEOUT_S} s")

    def open_document(self, root: Path, path: Path, text: str, settings: dict) -> None:
        """What an editor does first: initialize on ``root``, configure the plugins, open
        ``path`` with ``text`` (an unsaved buffer: the file on disk may differ)."""
        request = self.send("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
            "initializationOptions": settings["pylsp"],
        }, request=True)
        self.wait_for(lambda m: m.get("id") == request, "initialize reply")
        self.send("initialized", {})
        self.send("workspace/didChangeConfiguration", {"settings": settings})
        self.send("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": text,
        }})

    def close(self) -> None:
        try:
            request = self.send("shutdown", {}, request=True)
            self.wait_for(lambda m: m.get("id") == request, "shutdown reply")
            self.send("exit", {})
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
                stream.close()


def flake8_executable() -> str:
    beside_python = Path(sys.executable).with_name("flake8")
    return str(beside_python) if beside_python.is_file() else "flake8"


SETTINGS = {"pylsp": {
    "configurationSources": ["flake8"],
    "plugins": {
        "flake8": {"enabled": True, "executable": flake8_executable()},
        **{name: {"enabled": False} for name in (
            "pycodestyle", "pyflakes", "mccabe", "pydocstyle", "pylint", "autopep8", "yapf",
            "jedi_completion", "jedi_definition", "jedi_hover", "jedi_references",
            "jedi_signature_help", "jedi_symbols", "rope_autoimport", "rope_completion",
        )},
    },
}}


def test_pylsp_publishes_agl_diagnostics_for_an_open_buggy_file(tmp_path: Path):
    path = tmp_path / "ops.py"
    path.write_text(BUGGY_SOURCE, encoding="utf-8")
    server = LanguageServer(tmp_path)
    try:
        server.open_document(tmp_path, path, BUGGY_SOURCE, SETTINGS)
        published = server.wait_for(
            lambda m: m.get("method") == "textDocument/publishDiagnostics"
            and any(str(d.get("code", "")).startswith("AGL") for d in m["params"]["diagnostics"]),
            "publishDiagnostics with an AGL code",
        )
    finally:
        server.close()
    diagnostics = {d["code"]: d for d in published["params"]["diagnostics"]}
    assert published["params"]["uri"] == path.as_uri()
    assert {code for code in diagnostics if code.startswith("AGL")} == {"AGL101", "AGL201"}
    assert diagnostics["AGL201"]["source"] == "flake8"
    assert diagnostics["AGL201"]["message"].startswith("AGL201 ctx.x holds a tensor")
    # LSP positions are 0-based: line 5, column 9 of the CLI.
    assert diagnostics["AGL201"]["range"]["start"] == {"line": 4, "character": 8}
