"""The sandbox of the children that run the user's code under ``--dynamic`` (Linux).

``--dynamic-sandbox auto|require|off`` (config: ``sandbox`` in ``[tool.autograd-lint.dynamic]``).
Each child that imports user code (a fork of the fork server, or ``python -m
autograd_lint.dynamic.child``) calls ``enter`` first thing, before the user's module is imported:

- **network**: a fresh network namespace (``unshare(CLONE_NEWNET)``; unprivileged, with a user
  namespace of its own, ``CLONE_NEWUSER``), with no interface but a loopback that is down: no TCP,
  UDP or anything else leaves it, not even to 127.0.0.1. Where the kernel refuses namespaces,
  Landlock's network rules (ABI >= 4) deny TCP ``connect`` and ``bind`` (TCP only: UDP and raw
  sockets are not covered);
- **filesystem**: a Landlock ruleset that handles every *write* right (write, truncate, create,
  remove, rename, link) and allows them only under the child's own working directory (its scratch
  directory: TMPDIR, HOME and the caches point there), ``/dev/shm`` and a few devices
  (``/dev/null``, the NVIDIA devices for ``--device cuda``). Reads and execution are not handled:
  torch and the user's code read what the user can. Landlock also keeps the child from ptracing
  (so from reading ``/proc/PID/environ`` of) processes outside its domain, the runner included,
  and, from ABI 6, from signalling them or reaching their abstract unix sockets;
- **environment**: the runner starts the children with an environment stripped to what torch
  needs (``child_environment``); ``--dynamic-env NAME`` passes one more on purpose.

No library: ``landlock`` on PyPI is a development release and ``landlockpy`` a 0.x with few
users; the three system calls and their structures fit in this file, through ctypes.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import os
import sys
from typing import Optional

MODES = ("auto", "require", "off")

# --- Landlock (include/uapi/linux/landlock.h); the syscall numbers are the same on every
# architecture since they were added after the tables were unified.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1 << 0  # flag: return the ABI version instead of a ruleset
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_RULE_NET_PORT = 2
# Filesystem access rights (ABI 1 unless said): only the write ones are handled here.
ACCESS_FS_WRITE_FILE = 1 << 1
ACCESS_FS_REMOVE_DIR = 1 << 4
ACCESS_FS_REMOVE_FILE = 1 << 5
ACCESS_FS_MAKE_CHAR = 1 << 6
ACCESS_FS_MAKE_DIR = 1 << 7
ACCESS_FS_MAKE_REG = 1 << 8
ACCESS_FS_MAKE_SOCK = 1 << 9
ACCESS_FS_MAKE_FIFO = 1 << 10
ACCESS_FS_MAKE_BLOCK = 1 << 11
ACCESS_FS_MAKE_SYM = 1 << 12
ACCESS_FS_REFER = 1 << 13  # ABI 2: rename/link across directories
ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3
WRITE_RIGHTS_ABI1 = (ACCESS_FS_WRITE_FILE | ACCESS_FS_REMOVE_DIR | ACCESS_FS_REMOVE_FILE | ACCESS_FS_MAKE_CHAR
                     | ACCESS_FS_MAKE_DIR | ACCESS_FS_MAKE_REG | ACCESS_FS_MAKE_SOCK | ACCESS_FS_MAKE_FIFO
                     | ACCESS_FS_MAKE_BLOCK | ACCESS_FS_MAKE_SYM)
# Network access rights (ABI 4): TCP only.
ACCESS_NET_BIND_TCP = 1 << 0
ACCESS_NET_CONNECT_TCP = 1 << 1
# Scopes (ABI 6): no abstract unix socket or signal outside the domain.
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1
PR_SET_NO_NEW_PRIVS = 38  # required before landlock_restrict_self without CAP_SYS_ADMIN
# --- namespaces (include/uapi/linux/sched.h)
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

# Devices a child may write to: the rest of /dev is read-only to it (a raw disk, as root).
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/nvidia*", "/dev/shm")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the kernel's header
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class SandboxError(OSError):
    """A protection that was asked for could not be put on."""


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _libc().syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                                  ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def available() -> dict:
    """What this kernel offers, checked in the runner without side effects: ``filesystem`` and
    ``network`` each a description, or "" when not available."""
    abi = landlock_abi()
    return {
        "filesystem": f"Landlock ABI {abi}" if abi else "",
        # the namespace is tried in each child first; Landlock's TCP rules are the fallback known here
        "network": "a network namespace, else Landlock TCP rules" if abi >= 4 else (
            "a network namespace, if the kernel allows one" if sys.platform.startswith("linux") else ""),
    }


def missing_for_require() -> list[str]:
    """What ``--dynamic-sandbox require`` cannot have here (empty: it can run)."""
    abi = landlock_abi()
    missing = []
    if not abi:
        missing.append("filesystem (Landlock is not available in this kernel)")
    if abi < 4 and not _namespace_possible():
        missing.append("network (no network namespace, and Landlock ABI < 4 has no TCP rules)")
    return missing


def _namespace_possible() -> bool:
    """Whether a child could enter a network namespace: tried in a throwaway process."""
    import subprocess

    probe = (f"import ctypes,os;l=ctypes.CDLL(None,use_errno=True);"
             f"os._exit(0 if l.unshare({CLONE_NEWNET})==0 or l.unshare({CLONE_NEWUSER | CLONE_NEWNET})==0 else 1)")
    try:
        return subprocess.run([sys.executable, "-S", "-c", probe], timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def enter(workdir: str, mode: str) -> dict:
    """Put this process in the sandbox (``mode`` auto or require): which protections are on, as
    {"network": how or "", "filesystem": how or ""}. Raises SandboxError under ``require`` when one
    cannot be put on. Call it single-threaded (just after a fork, or before importing torch)."""
    _private_directories(workdir)
    applied = {"network": "", "filesystem": ""}
    if not sys.platform.startswith("linux"):  # no namespaces, no Landlock: only the environment
        if mode == "require":
            raise SandboxError(errno.ENOSYS, f"no sandbox on {sys.platform}")
        return applied
    libc = _libc()
    applied["network"] = _network_namespace(libc)
    abi = landlock_abi()
    if abi:
        try:
            applied.update(_landlock(libc, abi, workdir, tcp=not applied["network"]))
        except OSError as error:
            if mode == "require":
                raise SandboxError(error.errno, f"Landlock: {error.strerror}") from None
    missing = [name for name, how in applied.items() if not how]
    if mode == "require" and missing:
        raise SandboxError(errno.ENOSYS, f"the sandbox could not restrict: {', '.join(missing)}")
    _watch_sockets()
    return applied


# Where a child's temporary files, home and caches go, under its own directory. The child runs
# in that directory, which is on its ``sys.path``: a folder there named like a package that is
# not installed (``triton``, ``matplotlib``) would import as an empty namespace package, and
# torch, finding "triton", would fail to import ``torch._dynamo``. A name with a dot in it can
# never be imported.
PRIVATE_DIRECTORIES = {
    "TMPDIR": "tmp.d", "TEMP": "tmp.d", "TMP": "tmp.d", "HOME": "home.d", "XDG_CACHE_HOME": "cache.d",
    "TORCHINDUCTOR_CACHE_DIR": "inductor.d", "TRITON_CACHE_DIR": "triton.d", "TORCH_EXTENSIONS_DIR": "extensions.d",
    "CUDA_CACHE_PATH": "cuda.d", "MPLCONFIGDIR": "matplotlib.d",
}


def _private_directories(workdir: str) -> None:
    """TMPDIR, HOME and the caches, into the child's own directory: the only place it can write."""
    import tempfile

    for variable, name in PRIVATE_DIRECTORIES.items():
        directory = os.path.join(workdir, name)
        os.makedirs(directory, exist_ok=True)
        os.environ[variable] = directory
    tempfile.tempdir = None  # a fork inherits the server's cached choice


def _network_namespace(libc) -> str:
    if libc.unshare(CLONE_NEWNET) == 0:
        return "network namespace"
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        return ""
    # Map our own ids, else every file this process creates fails with EOVERFLOW.
    for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"{uid} {uid} 1"),
                       ("/proc/self/gid_map", f"{gid} {gid} 1")):
        try:
            with open(path, "w", encoding="ascii") as handle:
                handle.write(text)
        except OSError:
            pass
    return "user and network namespace"


def _landlock(libc, abi: int, workdir: str, tcp: bool) -> dict:
    handled_fs = WRITE_RIGHTS_ABI1 | (ACCESS_FS_REFER if abi >= 2 else 0) | (ACCESS_FS_TRUNCATE if abi >= 3 else 0)
    handled_net = ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP if tcp and abi >= 4 else 0
    attr = _RulesetAttr(handled_fs, handled_net, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8  # the struct grew with the ABI: give what it knows
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise _os_error("landlock_create_ruleset")
    try:
        writable = [workdir] + [path for pattern in WRITABLE_DEVICES for path in glob.glob(pattern)]
        file_rights = ACCESS_FS_WRITE_FILE | (ACCESS_FS_TRUNCATE if abi >= 3 else 0)  # a device: no create
        for path in writable:
            rights = handled_fs if os.path.isdir(path) else file_rights
            try:
                descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = _PathBeneathAttr(rights, descriptor)
                if libc.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    raise _os_error(f"landlock_add_rule {path}")
            finally:
                os.close(descriptor)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _os_error("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise _os_error("landlock_restrict_self")
    finally:
        os.close(ruleset)
    applied = {"filesystem": f"Landlock ABI {abi}"}
    if handled_net:
        applied["network"] = "Landlock TCP rules (TCP only)"
    return applied


def _os_error(what: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, f"{what}: {os.strerror(number)}")


# --- naming what the sandbox stopped ----------------------------------------------------------

_last_socket_call: list[Optional[tuple[str, object]]] = [None]


def _watch_sockets() -> None:
    """Remember the last socket connect/bind (an audit hook: cheap, and the only way to know
    which address a failed ``connect`` was for)."""
    def hook(event: str, arguments: tuple) -> None:
        if event in ("socket.connect", "socket.bind"):
            _last_socket_call[0] = (event.split(".")[1], arguments[1] if len(arguments) > 1 else None)

    sys.addaudithook(hook)


NETWORK_ERRNOS = (errno.ENETUNREACH, errno.EACCES, errno.EPERM, errno.EADDRNOTAVAIL, errno.EHOSTUNREACH)


def blocked(error: BaseException) -> str:
    """"blocked by the sandbox: ..." when ``error`` (or an exception it came from) is a write or a
    connection the sandbox refused, else ""."""
    seen = 0
    while error is not None and seen < 10:
        seen += 1
        if isinstance(error, OSError):
            filename = getattr(error, "filename", None)
            if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and filename:
                if _writable_but_for_the_sandbox(str(filename)):
                    return f"blocked by the sandbox: write to {filename} denied"
            elif error.errno in NETWORK_ERRNOS and _last_socket_call[0] is not None:
                call, address = _last_socket_call[0]
                where = ":".join(map(str, address)) if isinstance(address, tuple) else str(address)
                return f"blocked by the sandbox: network {call} to {where} denied"
        error = error.__cause__ or error.__context__
    return ""


def _writable_but_for_the_sandbox(path: str) -> bool:
    """``access(2)`` is not checked by Landlock: it says what the user's rights alone allow."""
    target = path
    while target and not os.path.exists(target):
        parent = os.path.dirname(target)
        if parent == target:
            break
        target = parent
    return bool(target) and os.access(target, os.W_OK)
