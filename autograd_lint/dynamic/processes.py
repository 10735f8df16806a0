"""How ``--dynamic`` starts its children: forked from the fork server, or one interpreter each.

Parent side: no torch. ``Launcher.run`` runs ``child.main`` once per module (a ``Job``), at most
``parallel`` at a time, each with its own time limit, and says for each job why it gave no
complete answer ("" when it finished). Two ways, with the same answers:

- the fork server (``forkserver``, Linux): one process imports torch and warms autograd once,
  every module's child is forked from it and starts with torch loaded (about 0.1 s instead of
  about 3 s per module);
- one ``python -m autograd_lint.dynamic.child`` per module: elsewhere, when the server cannot
  warm up, and with ``AUTOGRAD_LINT_DYNAMIC_FORK_SERVER=0`` (the tests compare both ways).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Optional

from autograd_lint.dynamic.forkserver import STDERR_NAME
from autograd_lint.dynamic.sessions import kill_session

FORK_SERVER_VARIABLE = "AUTOGRAD_LINT_DYNAMIC_FORK_SERVER"  # "0": one interpreter per module
SERVER_START_S = 120.0  # at least: importing torch on a cold, busy machine can take tens of seconds
ANSWER_SLACK_S = 30.0  # beyond a module's own limit, before a silent server counts as stuck


@dataclass(frozen=True)
class Job:
    id: int
    request: str  # the request file child.main reads
    result: str  # where it writes its answer
    workdir: str
    timeout: float


@dataclass(frozen=True)
class Ending:
    """How a child ended: ``status`` "" (it finished: its result file says the rest), "timed-out",
    "crashed" (a signal, no answer), "exited" (a non-zero exit status) or "import-failed" (no
    torch in the fork server); ``reason`` as the user reads it."""

    status: str = ""
    reason: str = ""


def fork_server_available() -> bool:
    return sys.platform.startswith("linux") and os.environ.get(FORK_SERVER_VARIABLE, "1") != "0"


class Launcher:
    """Starts the children of one run. Made before the static lint, so that the fork server
    imports torch meanwhile; ``run`` once per round (the first round checks every module, later
    ones resume modules whose child broke on one class); ``close`` (or the ``with`` block) stops
    the server."""

    def __init__(self, scratch: str, environment: dict) -> None:
        self.scratch, self.environment = scratch, environment
        self.server: Optional[subprocess.Popen] = None
        self.server_stderr = None
        self.rounds = 0
        # None until the server said whether it warmed up; then its "ready" message (not ready:
        # it cannot serve, and the children start one interpreter each).
        self.ready: Optional[dict] = None
        self.messages = None
        if fork_server_available():
            self.server_stderr = open(os.path.join(scratch, "forkserver-stderr.txt"), "wb")  # noqa: SIM115
            self.server = subprocess.Popen(
                [sys.executable, "-m", "autograd_lint.dynamic.forkserver"], cwd=scratch, env=environment,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.server_stderr,
                start_new_session=True)  # a Ctrl-C reaches the runner, which stops the server

    def run(self, jobs: list[Job], parallel: int, done: Callable[[Job, Ending], None]) -> dict[int, Ending]:
        """Job id -> how its child ended. ``done`` is called once per job as it ends, from this thread."""
        parallel = max(1, min(parallel, len(jobs) or 1))
        self.rounds += 1
        if jobs and self.server is not None:
            failures = self._through_server(jobs, parallel, done)
            if failures is not None:
                return failures
        return _one_interpreter_each(jobs, parallel, self.environment, done)

    def _through_server(self, jobs: list[Job], parallel: int,
                        done: Callable[[Job, Ending], None]) -> Optional[dict[int, Ending]]:
        """None when the server cannot serve (the caller then starts one interpreter each)."""
        server = self.server
        if self.messages is None:
            self.messages = _messages(server)
            self.ready = next(self.messages(max(SERVER_START_S, max(job.timeout for job in jobs))), None) or {}
        ready = self.ready or {}
        if not ready.get("ready"):
            if ready.get("fatal"):  # no torch: every child would say the same
                failures = {}
                for job in jobs:
                    failures[job.id] = Ending("import-failed", ready["reason"])
                    done(job, failures[job.id])
                return failures
            return None
        jobs_path = os.path.join(self.scratch, f"jobs-{self.rounds}.json")
        with open(jobs_path, "w", encoding="utf-8") as handle:
            json.dump([{"id": job.id, "request": job.request, "result": job.result, "workdir": job.workdir,
                        "timeout": job.timeout} for job in jobs], handle)
        try:
            server.stdin.write((json.dumps({"jobs": jobs_path, "parallel": parallel}) + "\n").encode())
            server.stdin.flush()
        except OSError:  # it died after warming up: nothing of this round has run yet
            self.ready = {"ready": False}
            return None
        failures = _served(self.messages, jobs, done)
        if len(failures) < len(jobs):
            self.ready = {"ready": False}  # it died or stopped answering: later rounds do without it
        for job in jobs:  # say so for what it did not finish
            if job.id not in failures:
                failures[job.id] = Ending("crashed", "the fork server stopped before this module was checked")
                done(job, failures[job.id])
        return failures

    def close(self) -> None:
        if self.server is not None:
            _stop_server(self.server)
            self.server = None
        if self.server_stderr is not None:
            self.server_stderr.close()
            self.server_stderr = None


# --- one interpreter per module ---------------------------------------------------------------

def _one_interpreter_each(jobs: list[Job], parallel: int, environment: dict,
                          done: Callable[[Job], None]) -> dict[int, Ending]:
    failures: dict[int, Ending] = {}
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = {pool.submit(_spawn, job, environment): job for job in jobs}
        for future, job in futures.items():
            failures[job.id] = future.result()
            done(job, failures[job.id])
    return failures


def _spawn(job: Job, environment: dict) -> Ending:
    command = [sys.executable, "-m", "autograd_lint.dynamic.child", job.request, job.result]
    posix = os.name == "posix"
    process = subprocess.Popen(command, cwd=job.workdir, env=environment, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=posix)
    try:
        _, stderr = process.communicate(timeout=job.timeout)
    except subprocess.TimeoutExpired:
        _kill(process, posix)
        process.communicate()
        return failure(job, process.returncode, True, b"")
    return failure(job, process.returncode, False, stderr)


def _kill(process: subprocess.Popen, posix: bool) -> None:
    try:
        if posix:
            kill_session(process.pid)  # the child and anything the module started
        else:
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass


def failure(job: Job, returncode: int, timed_out: bool, stderr: Optional[bytes]) -> Ending:
    """How a child ended, from its exit status (as ``subprocess`` gives it) and its stderr."""
    if timed_out:
        return Ending("timed-out", f"timed out after {job.timeout:g} s")
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return Ending("crashed", f"the module crashed the interpreter ({name})")
    if returncode != 0:  # os._exit(n) in the user's code, or an exception that escaped the child
        last = _last_line(stderr)
        return Ending("exited", f"the process exited with status {returncode}" + (f": {last}" if last else ""))
    if not os.path.exists(job.result):
        return Ending("crashed", "the child process gave no answer")
    return Ending()


def _last_line(stderr: Optional[bytes]) -> str:
    lines = (stderr or b"").decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:300] if lines else ""


# --- the fork server --------------------------------------------------------------------------

def _served(messages, jobs: list[Job], done: Callable[[Job, Ending], None]) -> dict[int, Ending]:
    """How the server's children of one round ended, as it says them; the jobs it did not finish
    are missing (it died, or stopped answering)."""
    by_id = {job.id: job for job in jobs}
    failures: dict[int, Ending] = {}
    for message in messages(max(job.timeout for job in jobs) + ANSWER_SLACK_S):
        job = by_id[message["id"]]
        stderr = _read_tail(os.path.join(job.workdir, STDERR_NAME))
        failures[job.id] = failure(job, message["returncode"], message["timed_out"], stderr)
        done(job, failures[job.id])
        if len(failures) == len(jobs):
            break
    return failures


def _messages(server: subprocess.Popen):
    """``messages(limit)``: the server's JSON lines, each within ``limit`` seconds of the one
    before; ends at end of file or when one is late."""
    selector = selectors.DefaultSelector()
    selector.register(server.stdout, selectors.EVENT_READ)
    buffered = b""
    descriptor = server.stdout.fileno()

    def messages(limit: float):
        nonlocal buffered
        while True:
            while b"\n" not in buffered:
                if not selector.select(limit):
                    return
                chunk = os.read(descriptor, 65536)
                if not chunk:
                    return
                buffered += chunk
            line, buffered = buffered.split(b"\n", 1)
            try:
                yield json.loads(line)
            except ValueError:
                return

    return messages


def _read_tail(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 65536))
            return handle.read()
    except OSError:
        return b""


def _stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()  # the server kills its running children's sessions, then exits
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    for stream in (server.stdin, server.stdout):
        if stream is not None and not stream.closed:
            try:
                stream.close()
            except OSError:
                pass
