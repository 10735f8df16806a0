"""One worker process of the pool, and the pipe to it.

The pool sends a batch whole and reads its answer whole, through one ``multiprocessing`` pipe
per worker, and waits on all the pipes at once (``multiprocessing.connection.wait``): no thread
of the main process stands between a batch and its answer (why not ``concurrent.futures``:
bench/NOTES.md).

A message to the worker is ``(step, payloads, shared)`` (``shared``: None for "as in the last
batch", so that the project's facts cross the pipe once per step), or None: stop. Its answer is
``(True, answers)`` or ``(False, (the exception, its traceback))``.

The pool sends the shared arguments, the only large message to a worker, with a worker's first
batch of a step, when that worker has nothing in flight and so is reading: a large message
never meets a full pipe at both ends (the worker writing an answer while the main process
writes to it).
"""

from __future__ import annotations

import gc
import pickle
import signal
import traceback
from typing import Callable, Optional


class WorkerDied(RuntimeError):
    """A worker process ended in the middle of a step (killed, out of memory)."""


class WorkerProcess:
    """A worker process, started at its first batch; ``in_flight``: the file indexes of each batch
    sent and not answered yet, oldest first (the worker answers in order)."""

    def __init__(self, context, make_state: Callable[[], object]) -> None:
        self.context, self.make_state = context, make_state
        self.process = None
        self.connection = None
        self.in_flight: list[list[int]] = []

    def send(self, indexes: list[int], step: Callable, payloads: list, shared: Optional[tuple]) -> None:
        if self.process is None:
            parent, child = self.context.Pipe()
            self.process = self.context.Process(target=serve, args=(child, self.make_state), daemon=True)
            self.process.start()
            child.close()  # this end is the worker's: its death then reads as the end of the pipe
            self.connection = parent
        try:
            self.connection.send((step, payloads, shared))
        except OSError:  # the pipe is closed: the worker has died
            raise self._died() from None
        self.in_flight.append(indexes)

    def receive(self) -> tuple[list[int], list]:
        """The oldest batch in flight's file indexes and answers; the worker's exception is
        raised here, and WorkerDied if the worker is gone."""
        try:
            ok, value = self.connection.recv()
        except (EOFError, OSError):
            raise self._died() from None
        indexes = self.in_flight.pop(0)
        if not ok:
            error, text = value
            raise (error or RuntimeError("a step failed in a worker process")) from _RemoteTraceback(text)
        return indexes, value

    def _died(self) -> WorkerDied:
        self.process.join(timeout=1)
        return WorkerDied(f"a worker process ended in the middle of a step (exit code {self.process.exitcode}): "
                          "out of memory, or killed")

    def stop(self) -> None:
        """Tell the worker to end (without waiting for it: ``join``). One still at a batch (a step
        that failed elsewhere, Ctrl-C) is terminated: its answers are not wanted, and it could
        be blocked writing one that nobody reads."""
        if self.process is None:
            return
        if self.in_flight:
            self.process.terminate()
            return
        try:
            self.connection.send(None)
        except OSError:  # it has ended already
            pass

    def join(self) -> None:
        if self.process is not None:
            self.process.join()
            self.connection.close()
            self.process = None
            self.in_flight.clear()


def serve(connection, make_state: Callable[[], object]) -> None:
    """The worker's loop: a step over each batch received, until told to stop or the pipe ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle: it stops us
    gc.disable()  # for the whole process: see autograd_lint/gc_pause.py
    state = make_state()
    shared: tuple = ()
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):  # the main process has gone
            return
        if message is None:
            return
        step, payloads, new_shared = message
        if new_shared is not None:
            shared = new_shared
        try:
            answer = (True, step(state, payloads, *shared))
        except BaseException as error:  # noqa: BLE001 - the main process raises it
            answer = (False, _portable(error))
        try:
            try:
                connection.send(answer)
            except (pickle.PicklingError, TypeError, AttributeError) as error:  # an answer that cannot cross
                connection.send((False, _portable(error)))
        except OSError:  # the main process has gone
            return


def _portable(error: BaseException) -> tuple[Optional[BaseException], str]:
    """``error`` (None when it cannot be pickled) and its traceback, for the main process to raise
    with the worker's traceback as its cause, as ``concurrent.futures`` does."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - anything that does not survive the pipe
        return None, text
    return error, text


class _RemoteTraceback(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text}"""'
