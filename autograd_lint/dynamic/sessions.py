"""Kill everything a ``--dynamic`` child started: its whole session, not only its process group.

Each child runs in a session of its own (``start_new_session``, or ``setsid`` in the fork
server), so that a timeout can stop what the user's module started too. ``os.killpg`` alone
is not enough: a build tool that the module runs puts its own commands in process groups of
their own (ninja does, for the C++ extension that ``torch.utils.cpp_extension.load`` compiles
at import), and those survived the child, compiling on after the run had moved on. Processes
keep their session when they change group, so on Linux the session is found in ``/proc``. A
process that calls ``setsid`` itself leaves the session; nothing short of a cgroup follows it.
"""

from __future__ import annotations

import os
import signal


def kill_session(session: int) -> None:
    """SIGKILL the process group ``session`` and every process still in that session."""
    try:
        os.killpg(session, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in _session_members(session):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _session_members(session: int) -> list[int]:
    try:
        entries = os.listdir("/proc")
    except OSError:  # not Linux: the process group is all that can be reached
        return []
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()  # the name, in brackets, may hold spaces
        except OSError:
            continue
        # After the name: state, ppid, pgrp, session (proc(5)).
        if len(fields) > 3 and int(fields[3]) == session and int(entry) != os.getpid():
            members.append(int(entry))
    return members
