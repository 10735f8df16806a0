"""The fork server of ``--dynamic``: torch imported and autograd warmed once, one fork per module.

    python -m autograd_lint.dynamic.forkserver

Started by the runner (``processes.Launcher``) before the static lint, in the scratch directory,
with the children's environment. It imports torch, runs the child's own check once on a small
Function of its own (``warm_up``: this loads what the first ``autograd.grad`` and the checks
load lazily, sympy and ``torch.fx.experimental.symbolic_shapes`` among them, about 1 s), writes
``{"ready": ...}`` on stdout, and reads lines on stdin, ``{"jobs": FILE, "parallel": N}``, one
per round of jobs, until end of file. For each, it forks one child per job of FILE (a JSON list),
at most N at a time, and writes one line per finished child: ``{"id", "returncode", "timed_out",
"seconds"}``. A round after the first resumes the modules whose child hung or crashed on one
class, from the next class (``runner``). What a child found goes, as before, through its result file (``child.main``);
its stderr goes to ``stderr.txt`` in its working directory.

Why an ``os.fork`` server of our own rather than multiprocessing's "forkserver" start method
with ``set_forkserver_preload``:

- the server must be the children's parent: it waits for each one with its own deadline, kills
  its whole session (``os.killpg``: anything the module started too) when the time is up, and
  reads the exit status and signal as ``subprocess`` gave them before. With multiprocessing the
  children are the forkserver's, and the parent only sees a sentinel and a pid;
- a preload list imports modules, but warming up means running code (a first backward, the
  checks themselves) with the global RNG state put back afterwards, not only importing;
- ``multiprocessing`` wraps each child in its bootstrap, which joins the module's non-daemon
  threads and runs its finalizers at exit: a module that starts a thread would then hang its
  child. Here each child ends with ``os._exit``, as ``python -m autograd_lint.dynamic.child`` did;
- the job list and the answers are a file and JSON lines, with nothing to pickle.

Isolation is the same as with one interpreter per module: each child is a fresh fork, so
whatever a module changes in torch's global state (default dtype, deterministic algorithms,
grad mode, threads, RNG) dies with its child and the next module starts from the server's
state, which no user code ever touched. The child gets its own session, working directory,
stdin/stdout on /dev/null, and the scratch environment (bytecode writing off) inherited from the
server. The sandbox (``sandbox.enter``, called first thing in ``child.main``) is put on in each
fork, not in the server: a fork is single-threaded, as entering a user namespace requires, and
each child may write only to its own directory. CUDA: the server never touches it (neither the warm-up nor ``torch.cuda.is_available()``,
which would initialise the driver and make CUDA unusable in every fork); a child asks for CUDA
only after the fork, in ``child.main``, and ``warm_up`` refuses to serve if CUDA got initialised.
No GPU was available where this was written: the CUDA path is covered by this rule, not by a run.

Linux only (``processes.fork_server_available``): on macOS a fork of a process that loaded
system frameworks is unsafe, and Windows has no fork; there, and with
``AUTOGRAD_LINT_DYNAMIC_FORK_SERVER=0``, the runner starts one interpreter per module instead.
"""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import sys
import time
import traceback
from typing import Any, Optional

from autograd_lint.dynamic.sessions import kill_session

MAX_WAIT_S = 0.5  # the longest the server waits without looking at its children
STDERR_NAME = "stderr.txt"


def warm_up() -> None:
    """Run the child's check once on a small correct Function, leaving torch's state as it was."""
    import torch

    from autograd_lint.dynamic import child, confirm  # noqa: F401  (loaded for every child)
    from autograd_lint.dynamic.confirmers import CONFIRMERS  # noqa: F401

    rng, seed = torch.random.get_rng_state(), torch.initial_seed()

    class WarmUpScale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, grad_output):
            x, w = ctx.saved_tensors
            return grad_output * w, grad_output * x

    request = {"module_path": __file__, "call_site_files": [], "config_examples": {}, "use_declared": False}
    entry = child.class_entry(WarmUpScale)
    child.check_class(WarmUpScale, sys.modules[__name__], request, "cpu", entry)
    torch.manual_seed(seed)  # the checks seed their inputs: put back the seed, then the state
    torch.random.set_rng_state(rng)
    if torch.cuda.is_initialized():  # a fork of a process with CUDA initialised cannot use CUDA
        raise RuntimeError("CUDA was initialised while warming up")


_STARTUP_PATH = sys.path[0] if sys.path else ""  # ``python -m`` puts the working directory first


def main() -> int:
    sys.dont_write_bytecode = True
    started = time.perf_counter()
    try:
        import torch  # noqa: F401
    except BaseException as error:  # noqa: B036 - reported to every module, as each child did
        _say({"ready": False, "reason": f"cannot import torch: {type(error).__name__}: {error}", "fatal": True})
        return 0
    try:
        warm_up()
    except BaseException as error:  # noqa: B036 - the runner falls back to one interpreter per module
        _say({"ready": False, "reason": f"warming up raised {type(error).__name__}: {error}"})
        return 0
    # Out of the collector's sight: a child's collections would otherwise touch (and so copy)
    # every page holding torch's Python objects. Nothing changes for the user's own objects.
    gc.collect()
    gc.freeze()
    if _say({"ready": True, "seconds": round(time.perf_counter() - started, 3)}):
        return 1
    while True:
        line = sys.stdin.readline()
        if not line.strip():  # the runner has no more rounds for us, or is gone
            return 0
        order = json.loads(line)
        with open(order["jobs"], encoding="utf-8") as handle:
            jobs = json.load(handle)
        if _serve(jobs, max(1, int(order["parallel"]))):
            return 1


def _serve(jobs: list[dict], parallel: int) -> int:
    pending = list(reversed(jobs))
    running: dict[int, tuple[dict, float, float]] = {}  # pid -> (job, deadline, forked at)
    timed_out: set[int] = set()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the runner gives up: see the except below
    # SIGCHLD stays pending until sigtimedwait takes it: the loop wakes as soon as a child ends
    # (or at the next deadline), with no race between reaping and waiting. Children unblock it.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        while pending or running:
            while pending and len(running) < parallel:
                job = pending.pop()
                now = time.monotonic()
                running[_fork(job)] = (job, now + job["timeout"], now)
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid in running:
                job, _, forked = running.pop(pid)
                killed = pid in timed_out
                timed_out.discard(pid)
                _kill_session(pid)  # what the module left running in its session goes with it
                if _say({"id": job["id"], "returncode": os.waitstatus_to_exitcode(status),
                         "timed_out": killed, "seconds": round(time.monotonic() - forked, 3)}):
                    _stop(running)
                    return 1
                continue
            now = time.monotonic()
            for pid, (job, deadline, _) in running.items():
                if now >= deadline and pid not in timed_out:
                    timed_out.add(pid)
                    _kill_session(pid)
            waiting = [deadline - now for pid, (_, deadline, _) in running.items() if pid not in timed_out]
            signal.sigtimedwait({signal.SIGCHLD}, min([MAX_WAIT_S, *waiting]) if waiting else MAX_WAIT_S)
    except BaseException:  # noqa: B036 - KeyboardInterrupt, a closed pipe: no child outlives the server
        _stop(running)
        raise
    return 0


def _fork(job: dict) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())  # as a fresh interpreter starts
        os.setsid()
        _child_streams(job["workdir"])
        code = _run_child(job)
    except BaseException:  # noqa: B036 - reported through stderr and the exit status, as a crash
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)  # never back into the server's loop; no atexit of the user's module
    return 0  # unreachable


def _child_streams(workdir: str) -> None:
    os.chdir(workdir)
    null = os.open(os.devnull, os.O_RDWR)
    error = os.open(os.path.join(workdir, STDERR_NAME), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(null, 0)
    os.dup2(null, 1)  # the protocol pipe: the user's prints must not reach it
    os.dup2(error, 2)
    os.close(null)
    os.close(error)


def _run_child(job: dict) -> int:
    """What ``python -m autograd_lint.dynamic.child REQUEST RESULT`` does, in this fork."""
    from autograd_lint.dynamic import child

    import torch

    # A fresh interpreter seeds Python's and torch's generators from the OS (torch 2.13 picks a
    # random initial seed); the forks would otherwise all share the server's.
    random.seed()
    torch.seed()
    if sys.path and _STARTUP_PATH and sys.path[0] == _STARTUP_PATH:  # as if started in its own directory
        sys.path[0] = job["workdir"]
    sys.argv = [child.__file__, job["request"], job["result"]]
    return child.main(sys.argv[1:])


def _kill_session(pid: int) -> None:
    kill_session(pid)  # each child called setsid: its pid is its session's id


def _stop(running: dict) -> None:
    for pid in list(running):
        _kill_session(pid)
    for pid in list(running):
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    running.clear()


def _say(message: dict[str, Any]) -> Optional[int]:
    """One JSON line to the runner; 1 when it is gone (the pipe is closed), else None."""
    try:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        return 1
    return None


if __name__ == "__main__":
    sys.exit(main())
