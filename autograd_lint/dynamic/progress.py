"""A progress bar over modules on a terminal (rich, on stderr); nothing at all otherwise."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator, Protocol


class Progress(Protocol):
    def advance(self, description: str) -> None: ...


class _Silent:
    def advance(self, description: str) -> None:
        pass


@contextmanager
def module_progress(total: int, enabled: bool) -> Iterator[Progress]:
    """``enabled``: the caller's choice (not --quiet); the bar also needs stderr to be a TTY."""
    if not (enabled and total and sys.stderr.isatty()):
        yield _Silent()
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, \
            TimeElapsedColumn
    except ImportError:  # rich is part of the dynamic extra; without it, no bar, same results
        yield _Silent()
        return
    columns = (TextColumn("dynamic"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.description}"))
    with RichProgress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("", total=total)

        class _Bar:
            def advance(self, description: str) -> None:
                bar.update(task, advance=1, description=description)

        yield _Bar()
