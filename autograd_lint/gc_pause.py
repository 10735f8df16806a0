"""``gc_paused()``: the cyclic garbage collector off for a block, restored afterwards.

Syntax trees and file summaries are millions of small objects without reference cycles: while
they are being made, each collection their allocations trigger walks all of them again for
nothing (the measurement: bench/NOTES.md)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
