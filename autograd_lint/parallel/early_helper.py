"""A helper process that does the first step of a parallel run while the main process loads the
parser.

The first step (reading and summarising the files) needs no parser, and loading libcst, the
rules and the fixers takes the main process a while. So the main process forks this helper
first, with a plain ``os.fork`` (``multiprocessing`` itself takes time to import, all of it
before the helper could start: bench/NOTES.md), and the helper works through the batches of
files from the front. Once the parser is loaded, the worker processes take batches from the back
until the two ends meet (``claim_from_back``).

The two ends are two integers in memory both processes share. Each side reads the other's end
before it takes a batch, so a batch is never left over; both may take the very last one, which
then is done twice, the same way. The helper writes its answers, pickled, to a pipe that a
thread of the main process reads as they come (on a large tree the answers fill the pipe's
buffer many times over). Each answer is a message with its length first, so that the thread
can unpickle every whole one as it arrives, once the main process has loaded the parser
(``decode_as_they_come``: before, unpickling would slow the loading the workers wait for;
after, none is left to unpickle while both workers wait for the step to end). If the helper
dies, the batches it took but did not answer are in ``unanswered`` for the caller to do again.
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
import threading
from typing import Callable, Optional

_FRONT, _BACK = 0, 8  # byte offsets of the two ends in the shared memory
_INT = struct.Struct("q")


class EarlyHelper:
    """Does ``step`` on ``batches`` (lists of ``(index, payload)``) from the front, in a forked
    process whose state is ``make_state()`` (see ``pool``: the same step a worker would do)."""

    def __init__(self, batches: list[list[tuple[int, object]]], make_state: Callable[[], object],
                 step: Callable[[object, list], list]) -> None:
        self.batches = batches
        self._ends = mmap.mmap(-1, 16)  # anonymous and shared: the forked process sees the writes
        self._set(_FRONT, 0)
        self._set(_BACK, len(batches))
        read, write = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # the helper
            os.close(read)
            code = 1
            try:
                self._work_from_front(write, make_state(), step)
                code = 0
            finally:
                os._exit(code)  # nothing of the parent's (atexit handlers, buffers) runs here
        os.close(write)
        self._data = bytearray()  # what the pipe gave that is not unpickled yet
        self._answers: dict[int, object] = {}
        self._answered: set[int] = set()
        self._decoding = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(read,), daemon=True)
        self._reader.start()

    def decode_as_they_come(self) -> None:
        """From now on, the main process's reading thread unpickles each answer as it arrives
        (call it once the main process is done loading)."""
        self._decoding.set()

    def claim_from_back(self) -> Optional[int]:
        """The index of a batch for another process to do, or None once the ends have met."""
        batch = self._get(_BACK) - 1
        if batch < self._get(_FRONT):
            return None
        self._set(_BACK, batch)
        return batch

    def stop(self) -> None:
        """No more batches for the helper: it stops after the one it is doing."""
        self._set(_BACK, 0)

    def answers(self) -> tuple[dict[int, object], list[int]]:
        """Waits for the helper to finish; returns (file index -> answer, the batches it took
        but never answered: none, unless it died)."""
        self._reader.join()
        os.waitpid(self._pid, 0)
        self._decode_whole_messages()  # a message cut short by a death stays in _data, unread
        taken = range(min(self._get(_FRONT), len(self.batches)))
        return self._answers, [batch for batch in taken if batch not in self._answered]

    # --- in the helper ----------------------------------------------------------------------
    def _work_from_front(self, pipe: int, state: object, step: Callable[[object, list], list]) -> None:
        with os.fdopen(pipe, "wb") as out:
            while True:
                batch = self._get(_FRONT)
                if batch >= self._get(_BACK):
                    return
                self._set(_FRONT, batch + 1)
                results = step(state, [payload for _, payload in self.batches[batch]])
                message = pickle.dumps((batch, results), protocol=pickle.HIGHEST_PROTOCOL)
                out.write(_INT.pack(len(message)))
                out.write(message)
                out.flush()

    # --- in the main process ----------------------------------------------------------------
    def _read(self, pipe: int) -> None:
        with os.fdopen(pipe, "rb", buffering=0) as source:
            while True:
                chunk = source.read(1 << 16)
                if not chunk:
                    return
                self._data += chunk
                if self._decoding.is_set():
                    self._decode_whole_messages()

    def _decode_whole_messages(self) -> None:
        """Unpickle every whole message at the front of ``_data`` (the reading thread, or the
        main thread once that thread has ended: never both at once)."""
        data, start = self._data, 0
        while len(data) - start >= _INT.size:
            (length,) = _INT.unpack_from(data, start)
            end = start + _INT.size + length
            if end > len(data):
                break  # the rest of it is still on its way
            try:
                batch, results = pickle.loads(data[start + _INT.size:end])
            except Exception:  # noqa: BLE001 - a message garbled by a dying helper: the rest is unread
                break
            self._answered.add(batch)
            self._answers.update(zip([index for index, _ in self.batches[batch]], results))
            start = end
        del data[:start]

    def _get(self, offset: int) -> int:
        return _INT.unpack_from(self._ends, offset)[0]

    def _set(self, offset: int, value: int) -> None:
        _INT.pack_into(self._ends, offset, value)
