"""The parent side of ``--dynamic``: one child process per module, answers mapped back to findings.

Never imports torch or the user's code itself. Each module with a Function class gets a child
(``child.main``), forked from the fork server where there is one, else its own interpreter
(``processes``), with a time limit, in a scratch directory that is also its TMPDIR and the home
of every cache torch may write (inductor, triton), so nothing lands in the user's tree; with
``--dynamic-sandbox`` auto or require (``sandbox``) the children get a stripped environment
(``kept_environment``) and each one, before the user's import, drops the network and every write
outside its own directory; what it stopped is named (status "sandbox-blocked"). A child
that times out, dies on a signal or exits on one class leaves that class not checked (and its
static findings ``unverified``) with the reason, and the module's remaining classes are checked in
a fresh child (``ModuleAnswer.absorb``): a hang in one class hides none after it. Every Function
class the static scan found in a linted module has an entry in the outcome, whatever the import
did (``_function_entries``); every class that was not checked is listed, with why
(``Outcome.unchecked``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from autograd_lint.dynamic.child import ABSTRACT_BASE, progress_path
from autograd_lint.dynamic.dedupe import Merge, RuntimeResult, merge_explained, merged_line
from autograd_lint.dynamic.processes import Ending, Job, Launcher
from autograd_lint.dynamic.progress import module_progress
from autograd_lint.dynamic.sandbox import PRIVATE_DIRECTORIES
from autograd_lint.dynamic.settings import DynamicSettings
from autograd_lint.findings import Finding
from autograd_lint.suppression import disabled_codes, noqa_codes

if TYPE_CHECKING:
    from autograd_lint.selection import RuleFilter

MAX_TEST_FILES = 2000  # call sites are also read from the project's tests/ (text filter first)
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])  # where `autograd_lint` is importable


@dataclass
class DynamicOptions:
    root: str  # project root (config directory or cwd): importable in the child
    device: str = "cpu"  # cpu | cuda | auto
    timeout: float = 60.0
    jobs: int = 1
    examples: dict = field(default_factory=dict)  # config: class key -> argument lists
    use_declared: bool = True  # False: --no-declared-examples
    show_progress: bool = True
    require_checked: bool = False  # --dynamic-require-checked: a class not checked fails the run
    sandbox: str = "auto"  # --dynamic-sandbox: auto | require | off (sandbox.py)
    pass_env: tuple[str, ...] = ()  # --dynamic-env NAME: variables passed to the children on purpose


class DynamicError(Exception):
    """--dynamic cannot run at all (no torch, no GPU for --device cuda): one line, exit 2."""


def options_from(args, config, jobs: int) -> DynamicOptions:
    """The options of this run: command line first, then [tool.autograd-lint.dynamic]."""
    import importlib.util

    from autograd_lint.dynamic.options import DEFAULT_TIMEOUT

    if importlib.util.find_spec("torch") is None:
        # No release is published: the install commands that work are a clone's or torch's own.
        raise DynamicError("--dynamic needs torch in the environment autograd-lint runs in: "
                           "pip install torch rich (or, in your clone of autograd-lint, pip install '.[dynamic]')")
    settings = config.dynamic or DynamicSettings()
    device = args.device or settings.device or "cpu"
    if device == "cuda":
        import warnings

        with warnings.catch_warnings():  # torch's import-time warnings (no numpy, ...) are noise here
            warnings.simplefilter("ignore")
            import torch  # only here: the parent needs to know before starting every child

        if not torch.cuda.is_available():
            raise DynamicError("--device cuda: no CUDA device is available (torch.cuda.is_available() is False)")
    sandbox_mode = args.dynamic_sandbox or settings.sandbox or "auto"
    if sandbox_mode == "require":
        from autograd_lint.dynamic.sandbox import missing_for_require

        missing = missing_for_require()
        if missing:
            raise DynamicError("--dynamic-sandbox require: this system cannot restrict "
                               + "; ".join(missing) + " (use --dynamic-sandbox auto to run with what it offers)")
    return DynamicOptions(
        root=str(config.root), device=device, sandbox=sandbox_mode,
        pass_env=tuple(dict.fromkeys([*settings.env, *(args.dynamic_env or [])])),
        timeout=args.dynamic_timeout or settings.timeout or DEFAULT_TIMEOUT, jobs=jobs,
        examples={key: [list(call) for call in calls] for key, calls in settings.examples},
        show_progress=not args.quiet, use_declared=not args.no_declared_examples,
        require_checked=bool(args.dynamic_require_checked or settings.require_checked),
    )


# A module whose classes ran past the time limit this many times is not resumed again: each
# resumption costs a whole --dynamic-timeout. Its classes not reached yet say so.
MAX_TIMEOUTS_PER_MODULE = 5


@dataclass
class ChildAnswer:
    """What one child said about a module (or why it said nothing), with how the child ended."""

    imported: bool = False
    classes: list[dict] = field(default_factory=list)
    confirmations: dict[int, tuple[str, str]] = field(default_factory=dict)
    failure: str = ""  # "" when the child finished
    status: str = ""  # with a failure: "import-failed", "timed-out", "crashed" or "exited" (STATUSES)
    sandbox: dict = field(default_factory=dict)  # the protections the child put on (sandbox.enter)
    not_definable: dict = field(default_factory=dict)  # "name:line" -> why a nested class stays undefined


@dataclass
class ModuleAnswer:
    """What the children of one module said, together: the first one, then one fresh child per
    class that hung, crashed or exited, each resuming after it (``absorb``)."""

    path: str
    classes: list[dict] = field(default_factory=list)
    confirmations: dict[int, tuple[str, str]] = field(default_factory=dict)
    # Why the last child stopped short ("" when it finished): with no class listed, the module
    # never imported; else the classes not reached yet are "not-reached" for this reason.
    failure: str = ""
    status: str = ""
    children: int = 0
    timeouts: int = 0
    sandboxes: list[dict] = field(default_factory=list)  # what each child put on
    not_definable: dict = field(default_factory=dict)  # ChildAnswer.not_definable, of every child

    def absorb(self, child: ChildAnswer) -> bool:
        """Take in one child's answer; True when a fresh child should go on with the classes
        after the one this child broke on (``skip``)."""
        self.children += 1
        if child.sandbox:
            self.sandboxes.append(child.sandbox)
        self.not_definable.update(child.not_definable)
        self.confirmations.update(child.confirmations)
        broken = bool(child.status)
        if broken and child.classes and child.classes[-1].get("stage") != "done":
            current = child.classes[-1]  # the class the child was on when it broke
            if current.get("stage") == "confirming":  # its checks finished: their results stand
                current["confirm_failure"] = child.failure
            else:
                current["status"], current["reason"] = child.status, f"{child.failure} while this class was checked"
                current["broke_child"] = True
        self.classes += child.classes
        self.failure, self.status = child.failure, child.status
        if child.status == "timed-out":
            self.timeouts += 1
        if not broken or not child.classes:
            return False  # finished, or broke before its first class: nothing new to skip
        if self.timeouts >= MAX_TIMEOUTS_PER_MODULE:
            self.failure = (f"not resumed: {self.timeouts} of this module's classes ran past --dynamic-timeout "
                            f"(the last: {child.failure})")
            return False
        return True

    def skip(self) -> list[tuple[str, int]]:
        """The classes a resumed child leaves alone: done, or the cause of a broken child."""
        return [(entry["qualname"], entry["line"]) for entry in self.classes]


# What became of a Function class (``status`` in the report): checked, or why not.
STATUSES = {
    "checked": "gradcheck ran (or the by-design check that replaces it), with the other runtime checks",
    "partly-checked": "some runtime checks ran (raw backward, say) but not gradcheck: `skipped` says why",
    "no-inputs": "no inputs could be built (the reason says what was tried)",
    "not-run": "inputs were built but no runtime check could run on them",
    "import-failed": "the module failed to import (an exception, sys.exit, no torch)",
    "timed-out": "its child ran past --dynamic-timeout on this class (or while importing the module)",
    "crashed": "its child died on a signal (a segfault, os.abort()) on this class (or while importing)",
    "exited": "its code ended the process (sys.exit, exit(), os._exit) while it was checked",
    "not-defined": "the static scan finds it, but importing the module did not define it (the reason says "
                   "where it is: under a condition that was false, inside a function the import did not call)",
    "not-reached": "a child of its module broke before reaching it, and was not resumed (the reason says why)",
    "sandbox-blocked": "its code (at import, or while its inputs were built) tried what the sandbox forbids: a "
                       "write outside the child's scratch directory, a network connection (the reason names it)",
}
# Runtime checks any one of which makes a class "checked": gradcheck, or a check that replaces
# it for a gradient that is not the derivative by design.
FULL_CHECKS = frozenset({"gradcheck"})


@dataclass
class DynamicOutcome:
    results: list  # FileResults with confirmations and the AGL9xx findings
    functions: list[dict]  # one entry per Function class: status, inputs, checks, seconds (REPORT_KEYS)
    unchecked: list[str]  # "path:line: Class: not checked: reason", one per class not checked
    summary: dict  # the counts (summary_counts)
    summary_line: str
    require_checked: bool = False  # the option: a class in ``unchecked`` fails the run
    # What to warn about the classes not checked: ``unchecked``, except that classes of one module
    # that all lack the same thing (a compiled extension, CUDA) share a line.
    notices: list[str] = field(default_factory=list)
    sandbox: dict = field(default_factory=dict)  # the protections that were on (``sandbox_summary``)

    def missed_checkable(self) -> bool:
        """A class that could have been checked was not (an abstract base cannot be: it is listed,
        and does not fail --dynamic-require-checked)."""
        return any(entry["status"] != "checked" and entry["reason"] != ABSTRACT_BASE for entry in self.functions)


class DynamicSession:
    """The scratch directory and the children's launcher of one run (``start_session``), made
    before the static lint so that the fork server imports torch meanwhile; a context manager."""

    def __init__(self, options: DynamicOptions) -> None:
        self.options = options
        self.scratch = tempfile.mkdtemp(prefix="autograd-lint-dynamic-")
        self.environment = _child_environment(self.scratch, options.sandbox != "off", options.pass_env, options.jobs)
        self.launcher = Launcher(self.scratch, self.environment)

    def close(self) -> None:
        self.launcher.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> "DynamicSession":
        return self

    def __exit__(self, *_) -> None:
        self.close()


def start_session(options: DynamicOptions) -> DynamicSession:
    return DynamicSession(options)


def run_dynamic(results: list, selection_for: Callable[[str], RuleFilter], options: DynamicOptions,
                linted_files: Iterable[str], session: Optional[DynamicSession] = None) -> DynamicOutcome:
    """``session``: one started earlier (the CLI does, before linting), else one for this call."""
    if session is None:
        with start_session(options) as own:
            return run_dynamic(results, selection_for, options, linted_files, own)
    started = time.perf_counter()
    modules = [result for result in results
               if (result.function_classes or getattr(result, "function_class_sites", None)) and not _unparsable(result)]
    call_site_files = _call_site_files(linted_files, options.root)
    answers = {result.path: ModuleAnswer(result.path) for result in modules}
    jobs = [_job(result, options, call_site_files, session.scratch, number) for number, result in enumerate(modules)]
    with module_progress(len(modules), options.show_progress) as progress:
        while jobs:  # a round: every module first, then the modules resumed after a broken class
            resumed: list[Job] = []

            def ended(job: Job, ending: Ending) -> None:
                result = modules[job.id]
                answer = answers[result.path]
                if answer.absorb(_child_answer(job, ending)):
                    resumed.append(_job(result, options, call_site_files, session.scratch, job.id,
                                        skip=answer.skip(), attempt=answer.children))
                else:
                    progress.advance(result.path)

            session.launcher.run(jobs, options.jobs, ended)
            jobs = resumed
    outcome = _outcome(results, answers, selection_for, time.perf_counter() - started,
                       sandbox_summary(options, answers.values(), session.environment))
    outcome.require_checked = options.require_checked
    return outcome


def _unparsable(result) -> bool:
    return any(finding.code == "AGL000" for finding in result.findings)


def _call_site_files(linted_files: Iterable[str], root: str) -> list[str]:
    """Linted files and the project's tests (read here, once or twice) that contain ``.apply(``, or
    a call of a module-level function that wraps one (``def sparsemax(X, dim=-1): return
    SparsemaxFunction.apply(X, dim)``): tests usually call the wrapper, not ``apply``."""
    candidates = [os.path.abspath(path) for path in linted_files]
    tests = Path(root) / "tests"
    if tests.is_dir():
        candidates += [str(path) for _, path in zip(range(MAX_TEST_FILES), tests.rglob("*.py"))]
    with_apply, others, wrappers = [], [], set()
    for path in dict.fromkeys(candidates):
        text = _read(path)
        if text is None:
            continue
        if ".apply(" in text:
            with_apply.append(path)
            wrappers |= apply_wrappers(text)
        else:
            others.append(path)  # not kept in memory: a large tree would not fit
    if not wrappers:
        return with_apply
    called = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, wrappers))) + r")\(")
    return with_apply + [path for path in others if called.search(_read(path) or "")]


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def apply_wrappers(text: str) -> set[str]:
    """Names of the module-level functions in ``text`` that call ``<Name>.apply(...)``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    return {node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("__")
            and any(isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "apply"
                    for call in ast.walk(node))}


SINGLE_THREADED_BLAS = {"OPENBLAS_NUM_THREADS": "1"}
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def threads_per_child(jobs: int) -> int:
    """Each of ``jobs`` children's share of the cores this process may use (at least one)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, jobs))


# What the children keep of the runner's environment when the sandbox is on (auto, require): what
# Python, torch, BLAS/OpenMP and CUDA read, nothing else. A name that looks like a credential is
# dropped even under a kept prefix; ``--dynamic-env NAME`` passes one on purpose.
KEPT_VARIABLES = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONPATH", "PYTHONHASHSEED",
                            "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONWARNINGS", "LD_LIBRARY_PATH",
                            "AUTOGRAD_LINT_DYNAMIC_FORK_SERVER"})
KEPT_PREFIXES = ("LC_", "OMP_", "MKL_", "OPENBLAS_", "KMP_", "GOMP_", "CUDA_", "NVIDIA_", "CUBLAS_", "CUDNN_",
                 "NCCL_", "TORCH_", "PYTORCH_")
_CREDENTIAL_WORDS = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|AUTH|PRIVATE", re.IGNORECASE)


def kept_environment(environment: dict, passed: Iterable[str] = ()) -> dict:
    """The variables of ``environment`` a sandboxed child gets (HOME and TMPDIR are set apart)."""
    passed = set(passed)
    return {name: value for name, value in environment.items()
            if name in passed or ((name in KEPT_VARIABLES or name.startswith(KEPT_PREFIXES))
                                  and not _CREDENTIAL_WORDS.search(name))}


def _child_environment(scratch: str, sandboxed: bool = False, passed: Iterable[str] = (), jobs: int = 1) -> dict:
    environment = kept_environment(os.environ, passed) if sandboxed else dict(os.environ)
    # `jobs` children run at once, and torch gives each as many OpenMP threads as there are
    # cores: on two cores, two children's convolutions then waited on each other's spinning
    # threads, a check 20 times slower (bench/dynamic-findings.md, "Threads"). Each child gets its
    # share of the cores, unless the user set the thread counts.
    for variable in THREAD_VARIABLES:
        environment.setdefault(variable, str(threads_per_child(jobs)))
    if sandboxed:  # each child points HOME at its own directory (sandbox.enter); this one is for the server
        environment["HOME"] = os.path.join(scratch, PRIVATE_DIRECTORIES["HOME"])
        os.makedirs(environment["HOME"], exist_ok=True)
    caches = {variable: name for variable, name in PRIVATE_DIRECTORIES.items() if variable != "HOME"}
    for variable, name in caches.items():
        directory = os.path.join(scratch, name)
        os.makedirs(directory, exist_ok=True)
        environment[variable] = directory
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_PARENT, environment.get("PYTHONPATH")]))
    # torch imports numpy when it is installed, and numpy's OpenBLAS starts a thread pool at
    # import: the fork server would then fork with threads running. One BLAS thread keeps it
    # single-threaded (the checks' tensors are small; torch's own ops are not affected).
    environment.update(SINGLE_THREADED_BLAS)
    return environment


CARRIED_DIRECTORIES = tuple(PRIVATE_DIRECTORIES[variable] for variable in ("TORCH_EXTENSIONS_DIR", "XDG_CACHE_HOME", "HOME"))
MAX_CARRIED_BYTES = 512 * 2**20


def _carry_built_extensions(previous: str, workdir: str) -> None:
    """A resumed child (after a class hung) starts with what its module's previous child built
    and cached: a C++ extension that the module compiles at import (``torch.utils.cpp_extension
    .load`` into TORCH_EXTENSIONS_DIR, or a package's own build under ``~/.cache``) took that
    child most of its time limit, and compiled again it would time the next class out too.
    Copied with their times kept, ninja finds the build up to date (or resumes a build that the
    time limit cut short). Its home and caches only: the child's own files stay its own."""
    sources = [os.path.join(previous, name) for name in CARRIED_DIRECTORIES]
    sources = [source for source in sources if os.path.isdir(source) and os.listdir(source)]
    if not sources or sum(_size(source) for source in sources) > MAX_CARRIED_BYTES:
        return
    for source in sources:
        try:
            shutil.copytree(source, os.path.join(workdir, os.path.basename(source)), symlinks=True, dirs_exist_ok=True)
        except (OSError, shutil.Error):
            pass  # the next child builds again


def _size(directory: str) -> int:
    total = 0
    for folder, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def _job(result, options: DynamicOptions, call_site_files: list[str], scratch: str, number: int,
         skip: Iterable[tuple[str, int]] = (), attempt: int = 0) -> Job:
    workdir = os.path.join(scratch, f"module-{number}" + (f"-{attempt}" if attempt else ""))
    os.makedirs(workdir)
    if attempt:
        _carry_built_extensions(os.path.join(scratch, f"module-{number}" + (f"-{attempt - 1}" if attempt > 1 else "")),
                                workdir)
    request_path, result_path = os.path.join(workdir, "request.json"), os.path.join(workdir, "result.json")
    request = {
        "module_path": os.path.abspath(result.path),
        "project_root": os.path.abspath(options.root),
        "device": options.device,
        "findings": [finding.to_json() for finding in result.findings],
        "call_site_files": call_site_files,
        "config_examples": options.examples,
        "use_declared": options.use_declared,
        "skip": [list(key) for key in skip],
        "sandbox": options.sandbox,
        # the Function classes the static scan found: those inside uncalled functions may be
        # defined from their source (dynamic/nested.py)
        "static_classes": [list(site) for site in getattr(result, "function_class_sites", None) or []],
    }
    with open(request_path, "w", encoding="utf-8") as handle:
        json.dump(request, handle)
    return Job(number, request_path, result_path, workdir, options.timeout)


def _with_stages(classes: list[dict], progress: dict) -> list[dict]:
    """The result file's classes, each at the stage the progress file gives the last one: every
    class before it is done; a class still being checked is not in the result file yet."""
    current = progress.get("entry") or {}
    key = (current.get("qualname"), current.get("line"))
    for entry in classes:
        entry["stage"] = progress["stage"] if (entry["qualname"], entry["line"]) == key else "done"
    if progress.get("stage") == "checking" and key not in [(entry["qualname"], entry["line"]) for entry in classes]:
        classes.append({**current, "stage": "checking"})
    return classes


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _child_answer(job: Job, ending: Ending) -> ChildAnswer:
    """What one child wrote, and how it ended: the process's fate outranks what its file says."""
    answer = ChildAnswer()
    data = _read_json(job.result)
    if data.get("import") == "ok":
        answer.imported = True
        answer.classes = _with_stages(data.get("classes", []), _read_json(progress_path(job.result)))
        answer.confirmations = {int(index): (value[0], value[1])
                                for index, value in data.get("confirmations", {}).items()}
    answer.sandbox = data.get("sandbox") or {}
    answer.not_definable = data.get("not_definable") or {}
    if ending.status:
        answer.failure, answer.status = ending.reason, ending.status
    elif data and data.get("import") != "ok":
        answer.failure, answer.status = data.get("reason") or "failed to import", (
            "sandbox-blocked" if data.get("blocked") else "import-failed")
    elif not data.get("done"):  # os._exit(0) in the user's code: the process ended, status 0
        answer.failure, answer.status = "the process exited (status 0) before the check finished", "exited"
    return answer


def _outcome(results: list, answers: dict[str, ModuleAnswer], selection_for: Callable[[str], RuleFilter],
             seconds: float, sandbox: Optional[dict] = None) -> DynamicOutcome:
    updated, functions = [], []
    for result in results:
        answer = answers.get(result.path)
        findings = [_confirmed(finding, index, answer, result) for index, finding in enumerate(result.findings)]
        if answer is not None:
            runtime = _runtime_findings(result.path, answer, selection_for(result.path))
            findings, kept, merges = merge_explained(findings, runtime)
            findings += kept
            functions += _function_entries(result, answer, merges)
        updated.append(replace(result, findings=findings))
    unchecked = [_unchecked_line(entry) for entry in functions if entry["status"] != "checked"]
    counts = summary_counts(functions, updated, len(answers), seconds)
    if sandbox is not None:
        counts["sandbox"] = sandbox
    return DynamicOutcome(updated, functions, unchecked, counts, summary_line(counts),
                          notices=unchecked_notices(functions), sandbox=sandbox or {})


def sandbox_summary(options: DynamicOptions, answers: Iterable[ModuleAnswer], environment: dict) -> dict:
    """The report's ``summary.sandbox``: the mode, and each protection as the children put it on
    ("" when off, or when some child could not put it on; "partly: ..." when only some could)."""
    if options.sandbox == "off":
        return {"mode": "off", "network": "", "filesystem": "", "environment": ""}
    sandboxes = [sandbox for answer in answers for sandbox in answer.sandboxes]
    summary = {"mode": options.sandbox}
    for protection in ("network", "filesystem"):
        ways = sorted({sandbox.get(protection, "") for sandbox in sandboxes})
        summary[protection] = (ways[0] if len(ways) == 1 else
                               f"partly: {', '.join(way or 'none' for way in ways)}" if ways else "")
    passed = [name for name in options.pass_env if name in environment]
    summary["environment"] = ("stripped to what torch needs"
                              + (f" (passed on purpose: {', '.join(passed)})" if passed else ""))
    return summary


def sandbox_words(sandbox: dict) -> str:
    """The summary line's words for ``summary.sandbox``."""
    if sandbox.get("mode") == "off":
        return "sandbox: off (the children ran with your rights, network and environment)"
    network = f"no network ({sandbox['network']})" if sandbox.get("network") else "network NOT restricted"
    filesystem = (f"writes only to scratch ({sandbox['filesystem']})" if sandbox.get("filesystem")
                  else "writes NOT restricted")
    return f"sandbox {sandbox.get('mode', 'auto')}: {network}, {filesystem}, environment {sandbox.get('environment', '')}"


def _unchecked_line(entry: dict) -> str:
    where = f"{entry['path']}:{entry['line']}" if entry["line"] else entry["path"]
    name = entry["function_class"] or "a Function class"
    if entry["status"] == "partly-checked":
        return f"{where}: {name}: only partly checked (ran: {', '.join(entry['ran'])}): {entry['reason']}"
    return f"{where}: {name}: not checked: {entry['reason']}"


# What this machine lacks, read from forward's exception: the reason is the same for every class
# of a module that needs it, so it is said once per module.
_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError|OptionalImportError|OSError)\b.*?"
                             r"(?:No module named '([\w.]+)'|import ([\w.]+)\b|cannot open shared object file|"
                             r"undefined symbol|Could not load this library: (\S+))")
_NEEDS_CUDA = re.compile(r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|no CUDA GPUs are available|"
                         r"CUDA driver|requires a GPU|CUDA is not available", re.IGNORECASE)


def missing_environment(reason: str) -> str:
    """"needs CUDA ..." or "needs the compiled extension ..." when ``reason`` (why a class was not
    checked) shows that the machine lacks it, else ""."""
    if _NEEDS_CUDA.search(reason):
        return "needs CUDA, which this machine does not have"
    match = _MISSING_MODULE.search(reason)
    if match:
        name = next((group for group in match.groups() if group), "")
        return (f"needs the compiled extension or optional module `{name}`, which is not importable here"
                if name else "needs a compiled extension that does not load here")
    return ""


def _environment_reason(reason: str) -> str:
    """``reason`` said plainly when it is something this machine lacks: what is missing, then the
    exception that showed it (not the shapes that were being tried)."""
    missing = missing_environment(reason)
    if not missing:
        return reason
    raised = reason[reason.index("raised ") + len("raised "):] if "raised " in reason else reason
    return f"{missing} ({raised.rstrip(')').rstrip('.')})"


def unchecked_notices(functions: list[dict]) -> list[str]:
    """The warnings for the classes not checked: one line per class, except that the classes of a
    module that all lack the same thing (a compiled extension, CUDA) share one line."""
    order: list[tuple[str, str]] = []  # (path, what is missing), or (line, "") for a class alone
    grouped: dict[tuple[str, str], list[dict]] = {}
    for entry in functions:
        if entry["status"] == "checked":
            continue
        missing = missing_environment(entry["reason"])
        key = (entry["path"], missing) if missing else (_unchecked_line(entry), "")
        if key not in grouped:
            order.append(key)
            grouped[key] = []
        grouped[key].append(entry)
    lines = []
    for key in order:
        entries = grouped[key]
        if len(entries) == 1:
            lines.append(_unchecked_line(entries[0]))
            continue
        names = ", ".join(entry["function_class"] or "?" for entry in entries)
        lines.append(f"{key[0]}: {len(entries)} Function classes not checked ({names}): {entries[0]['reason']}")
    return lines


def _confirmed(finding: Finding, index: int, answer: Optional[ModuleAnswer], result) -> Finding:
    if answer is None:
        reason = ("the file could not be read or parsed" if _unparsable(result)
                  else "no Function class is defined in this file, so nothing of it was run")
        return replace(finding, confirmation="unverified", evidence=reason)
    if index in answer.confirmations:
        confirmation, evidence = answer.confirmations[index]
        return replace(finding, confirmation=confirmation, evidence=evidence)
    return replace(finding, confirmation="unverified", evidence=_unconfirmed_reason(finding, answer))


def _unconfirmed_reason(finding: Finding, answer: ModuleAnswer) -> str:
    """Why a static finding got no confirmation: its class's child broke (on the class, or while
    confirming), or the module's last child stopped short."""
    for entry in answer.classes:
        if finding.function_class in (entry["name"], entry["qualname"]) and (
                entry.get("broke_child") or entry.get("confirm_failure")):
            return entry.get("confirm_failure") or entry["reason"]
    return answer.failure or "not checked"


# What to do about a runtime finding, where the check's own message does not say it.
FIX_HINTS = {
    "AGL902": ("; if backward is not meant to be differentiated again, mark it @once_differentiable "
               "(torch.autograd.function), otherwise build it from differentiable torch ops (no .detach(), "
               ".data, numpy or torch.no_grad())"),
}


def _runtime_findings(path: str, answer: ModuleAnswer, selection: RuleFilter) -> list[RuntimeResult]:
    lines = _lines(path)
    found = []
    for entry in answer.classes:
        source_line = lines[entry["line"] - 1] if 0 < entry["line"] <= len(lines) else ""
        suppressed_here = noqa_codes(source_line)
        disabled = disabled_codes(source_line)
        for runtime in entry.get("runtime_findings", []):
            code = runtime["code"]
            if not selection.is_enabled(code) or any(code.startswith(d) for d in disabled):
                continue
            if suppressed_here is not None and (not suppressed_here or any(code.startswith(c) for c in suppressed_here)):
                continue
            inputs = entry.get("inputs") or {}
            finding = Finding(
                path=path, line=entry["line"], column=entry["column"], code=code,
                message=f"{entry['qualname']}: {runtime['message']}{FIX_HINTS.get(code, '')}",
                # No confirmation: that word is for static findings. The evidence says what it ran on.
                function_class=entry["name"], level=runtime.get("level", ""),
                evidence=f"ran on {inputs.get('source', '?')} inputs {inputs.get('detail', '')}".strip(),
            )
            found.append(RuntimeResult(finding, runtime["message"], frozenset({entry["name"], entry["qualname"]}),
                                       tuple(runtime.get("kinds", ()))))
    return found


def _lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


# Every entry of the report's "functions" has these keys, in this order (docs/dynamic-report.schema.json).
REPORT_KEYS = ("path", "function_class", "line", "status", "reason", "inputs", "ran", "skipped",
               "runtime_findings", "merged", "inputs_seconds", "check_seconds", "seconds")


def _function_entries(result, answer: ModuleAnswer, merges: list[Merge]) -> list[dict]:
    """One entry per class the children met, and one per class the static scan found that they
    did not (with why: the module did not import, its child broke first, or the import did not
    define it), in source order."""
    entries = []
    for entry in answer.classes:
        status, reason = _class_status(entry)
        entries.append(_entry(
            result.path, entry["qualname"], entry["line"], status, reason,
            inputs=entry.get("inputs"), ran=entry.get("ran", []), skipped=entry.get("skipped", []),
            runtime_findings=[f["code"] for f in entry.get("runtime_findings", [])],
            # runtime findings not reported on their own: the confirmed static finding explains them
            merged=[merged_line(merge) for merge in merges
                    if merge.runtime.line == entry["line"] and merge.runtime.function_class == entry["name"]],
            inputs_seconds=entry.get("inputs_seconds"), check_seconds=entry.get("check_seconds"),
            seconds=entry.get("seconds")))
    met = [(entry["name"], entry["line"]) for entry in answer.classes]
    for site in _sites_of(result):
        if any(name == site.name and site.first_line <= line <= site.line for name, line in met):
            continue
        if not answer.classes and answer.status:  # the module never got as far as its classes
            status, reason = answer.status, answer.failure
        elif answer.status:
            status, reason = "not-reached", f"not reached: the module's child stopped first ({answer.failure})"
        else:
            status, reason = "not-defined", f"not defined at import: {site.where}"
            why = answer.not_definable.get(f"{site.name}:{site.line}")
            if why:  # inside an uncalled function, and not definable from its source alone
                reason += f"; {why}"
        entries.append(_entry(result.path, site.qualname, site.line, status, reason))
    return sorted(entries, key=lambda entry: entry["line"] or 0)


def _entry(path: str, name: Optional[str], line: Optional[int], status: str, reason: str, **details) -> dict:
    entry = {"path": path, "function_class": name, "line": line, "status": status, "reason": reason,
             "inputs": None, "ran": [], "skipped": [], "runtime_findings": [], "merged": [],
             "inputs_seconds": None, "check_seconds": None, "seconds": None}
    entry.update(details)
    return entry


def _class_status(entry: dict) -> tuple[str, str]:
    if entry.get("broke_child"):  # the class the child hung, crashed or exited on
        return entry["status"], entry["reason"]
    if entry.get("blocked"):  # its code tried what the sandbox forbids
        return "sandbox-blocked", f"{entry['blocked']} ({entry.get('reason') or 'building its inputs failed'})"
    if entry.get("exited"):  # forward called sys.exit(): caught, but it would end the caller's process
        return "exited", entry.get("reason") or "; ".join(entry.get("skipped") or ())
    if entry.get("reason") == ABSTRACT_BASE:
        return "not-run", ABSTRACT_BASE
    if not entry.get("inputs"):
        return "no-inputs", _environment_reason(entry.get("reason") or "could not build inputs")
    if not entry.get("ran"):
        return "not-run", "; ".join(entry.get("skipped") or ()) or "no runtime check ran"
    if not FULL_CHECKS.intersection(entry["ran"]):
        return "partly-checked", "; ".join(entry.get("skipped") or ()) or "gradcheck did not run"
    return "checked", ""


@dataclass(frozen=True)
class Site:
    """A Function class as the static scan sees it: where it is, and where it sits."""

    name: str
    qualname: str
    line: int  # of the `class` statement
    first_line: int  # of its first decorator (what inspect reports), else ``line``
    where: str  # why an import may not define it ("under `if HAS_TRITON:`, a condition that was false")
    bases: tuple[str, ...] = ()  # the last part of each base's name (``Function``, ``_ScaleBase``)


def _sites_of(result) -> list[Site]:
    """The Function classes the static scan found in ``result``'s file (nested in a function,
    under an ``if``, same-named ones each on its own), placed by this file's syntax tree."""
    static = getattr(result, "function_class_sites", None) or []
    placed = {(site.name, site.line): site for site in _placed_classes(result.path)}
    if not static:  # a result from before the scan recorded them: the syntax tree's guess
        return [site for site in placed.values() if site.name in _function_names(placed.values())]
    return [placed.get((name, line)) or Site(name, name, line, line, "the import did not define it")
            for name, line in static]


def _function_names(sites: Iterable[Site]) -> set[str]:
    sites = list(sites)
    names = {"Function"}
    changed = True
    while changed:  # subclasses of this file's Function classes are Function classes too
        changed = False
        for site in sites:
            if site.name not in names and names.intersection(site.bases):
                names.add(site.name)
                changed = True
    return names - {"Function"}


INSIDE_UNCALLED = "inside "


def _placed_classes(path: str) -> list[Site]:
    """Every class statement of the file at ``path``, with its qualified name and what encloses it."""
    try:
        tree = ast.parse(_read(path) or "")
    except (SyntaxError, ValueError):
        return []
    found: list[Site] = []

    def visit(node: ast.AST, prefix: str, where: str) -> None:
        for field_name, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if not isinstance(child, ast.AST):
                    continue
                inner = where
                if where.startswith(INSIDE_UNCALLED):
                    pass  # a function the import did not call: its `if`s never ran, true or false
                elif isinstance(node, ast.If) and field_name in ("body", "orelse"):
                    test = ast.unparse(node.test)
                    test = test if len(test) <= 80 else test[:77] + "..."
                    inner = (f"under `if {test}:`, a condition that was false at import" if field_name == "body"
                             else f"under the `else` of `if {test}:`, a condition that was true at import")
                elif isinstance(node, ast.Try) and field_name == "body":
                    inner = "in a `try` block that raised before reaching it at import"
                elif isinstance(node, ast.Try) and field_name == "handlers":
                    inner = "in an `except` block that did not run at import"
                if isinstance(child, ast.ClassDef):
                    first = min([child.lineno] + [decorator.lineno for decorator in child.decorator_list])
                    bases = tuple(ast.unparse(base).rsplit(".", 1)[-1] for base in child.bases)
                    found.append(Site(child.name, prefix + child.name, child.lineno, first, inner, bases))
                    visit(child, f"{prefix}{child.name}.", inner)
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, f"{prefix}{child.name}.<locals>.", where if where.startswith(INSIDE_UNCALLED)
                          else f"{INSIDE_UNCALLED}`{prefix}{child.name}()`, which the import did not call")
                else:
                    visit(child, prefix, inner)

    visit(tree, "", "the import did not define it where the source has it")
    return found


SOURCE_WORDS = (("declared", "declared"), ("call-site", "call sites"), ("synthesized", "synthesized"))
CONFIRMATIONS = ("confirmed", "not-reproduced", "unverified")


def summary_counts(functions: list[dict], results: list, modules: int, seconds: float) -> dict:
    """The report's ``summary``: counts only (docs/dynamic-report.schema.json)."""
    static = [f for result in results for f in result.findings if not f.code.startswith("AGL9")]
    return {
        "modules": modules,
        "function_classes": len(functions),
        "checked": sum(1 for entry in functions if entry["status"] == "checked"),
        "not_checked": {status: sum(1 for entry in functions if entry["status"] == status)
                        for status in STATUSES if status != "checked"},
        "inputs": {source: sum(1 for entry in functions if (entry["inputs"] or {}).get("source") == source)
                   for source, _ in SOURCE_WORDS},
        "static_findings": {confirmation: sum(1 for f in static if f.confirmation == confirmation)
                            for confirmation in CONFIRMATIONS},
        "runtime_findings": sum(1 for result in results for f in result.findings if f.code.startswith("AGL9")),
        "merged": sum(len(entry["merged"]) for entry in functions),
        "seconds": round(seconds, 3),
    }


def summary_line(counts: dict) -> str:
    total = counts["function_classes"]
    built = sum(counts["inputs"].values())
    rate = f"{round(100 * built / total)}%" if total else "n/a"
    partly = counts["not_checked"].get("partly-checked", 0)
    not_checked = sum(counts["not_checked"].values()) - partly
    why = ", ".join(f"{number} {status}" for status, number in counts["not_checked"].items()
                    if number and status != "partly-checked")
    checked = (f"{counts['checked']} checked"
               + (f", {partly} only partly checked (no gradcheck; listed above)" if partly else "")
               + (f", {not_checked} not checked ({why}; listed above)" if not_checked else ""))
    sources = ", ".join(f"{counts['inputs'][source]} {words}" for source, words in SOURCE_WORDS)
    confirmations = ", ".join(f"{number} {word}" for word, number in counts["static_findings"].items())
    merged = counts["merged"]
    merged_words = f" (and {merged} merged into the static findings that explain them)" if merged else ""
    sandbox = f"; {sandbox_words(counts['sandbox'])}" if counts.get("sandbox") else ""
    return (f"dynamic: {total} Function class{'es' * (total != 1)}: {checked}; inputs built for {built} ({rate}): "
            f"{sources}; static findings: {confirmations}; runtime findings (AGL9xx): "
            f"{counts['runtime_findings']}{merged_words}; {counts['seconds']:.1f} s{sandbox}")


def write_report(path: str, outcome: DynamicOutcome) -> None:
    """``--dynamic-report FILE``: the per-Function entries and the summary counts, as JSON
    (docs/dynamic-report.schema.json)."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"version": REPORT_VERSION, "functions": outcome.functions, "summary": outcome.summary},
                  handle, indent=2)
        handle.write("\n")


REPORT_VERSION = 1
