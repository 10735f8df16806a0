"""The parent side of ``--dynamic``: one child process per module, answers mapped back to findings.

Never imports torch or the user's code itself. Each module with a Function class gets a child
(``child.main``), forked from the fork server where there is one, else its own interpreter
(``processes``), with a time limit, in a scratch directory that is also its TMPDIR and the home
of every cache torch may write (inductor, triton), so nothing lands in the user's tree. A child
that times out, dies on a signal or exits without an answer leaves its classes not checked and
its static findings ``unverified``, with the reason; the other modules go on. Every class that
was not checked is listed, with why (``Outcome.unchecked``).
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
from typing import Callable, Iterable, Optional

from autograd_lint.dynamic.child import ABSTRACT_BASE
from autograd_lint.dynamic.dedupe import Merge, RuntimeResult, merge_explained, merged_line
from autograd_lint.dynamic.processes import Ending, Job, Launcher
from autograd_lint.dynamic.progress import module_progress
from autograd_lint.findings import Finding
from autograd_lint.suppression import disabled_codes, noqa_codes
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
    settings = config.dynamic
    device = args.device or settings.device or "cpu"
    if device == "cuda":
        import warnings

        with warnings.catch_warnings():  # torch's import-time warnings (no numpy, ...) are noise here
            warnings.simplefilter("ignore")
            import torch  # only here: the parent needs to know before starting every child

        if not torch.cuda.is_available():
            raise DynamicError("--device cuda: no CUDA device is available (torch.cuda.is_available() is False)")
    return DynamicOptions(
        root=str(config.root), device=device,
        timeout=args.dynamic_timeout or settings.timeout or DEFAULT_TIMEOUT, jobs=jobs,
        examples={key: [list(call) for call in calls] for key, calls in settings.examples},
        show_progress=not args.quiet, use_declared=not args.no_declared_examples,
        require_checked=bool(args.dynamic_require_checked or settings.require_checked),
    )


@dataclass
class ModuleAnswer:
    """What a child said about one module (or why it said nothing)."""

    path: str
    classes: list[dict] = field(default_factory=list)
    confirmations: dict[int, tuple[str, str]] = field(default_factory=dict)
    failure: str = ""  # "" when the module was imported and every check finished
    status: str = ""  # with a failure: "import-failed", "timed-out" or "crashed" (STATUSES)


# What became of a Function class (``status`` in the report): checked, or why not.
STATUSES = {
    "checked": "inputs were built and at least one runtime check ran",
    "no-inputs": "no inputs could be built (the reason says what was tried)",
    "not-run": "inputs were built but no runtime check could run on them",
    "import-failed": "the module failed to import (an exception, sys.exit, no torch)",
    "timed-out": "the module's child ran past --dynamic-timeout before this class was done",
    "crashed": "the module's child died (a signal, an exit) before this class was done",
}


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
        self.environment = _child_environment(self.scratch)
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
    modules = [result for result in results if result.function_classes and not _unparsable(result)]
    call_site_files = _call_site_files(linted_files, options.root)
    jobs = [_job(result, options, call_site_files, session.scratch, number) for number, result in enumerate(modules)]
    with module_progress(len(modules), options.show_progress) as progress:
        endings = session.launcher.run(jobs, options.jobs, lambda job: progress.advance(modules[job.id].path))
    answers = {result.path: _answer(result.path, job, endings[job.id]) for job, result in zip(jobs, modules)}
    outcome = _outcome(results, answers, selection_for, time.perf_counter() - started)
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


def _child_environment(scratch: str) -> dict:
    environment = dict(os.environ)
    caches = {
        "TMPDIR": "tmp", "TEMP": "tmp", "TMP": "tmp", "TORCHINDUCTOR_CACHE_DIR": "inductor",
        "TRITON_CACHE_DIR": "triton", "XDG_CACHE_HOME": "cache", "TORCH_EXTENSIONS_DIR": "extensions",
        "CUDA_CACHE_PATH": "cuda", "MPLCONFIGDIR": "matplotlib",
    }
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


def _job(result, options: DynamicOptions, call_site_files: list[str], scratch: str, number: int) -> Job:
    workdir = os.path.join(scratch, f"module-{number}")
    os.makedirs(workdir)
    request_path, result_path = os.path.join(workdir, "request.json"), os.path.join(workdir, "result.json")
    request = {
        "module_path": os.path.abspath(result.path),
        "project_root": os.path.abspath(options.root),
        "device": options.device,
        "findings": [finding.to_json() for finding in result.findings],
        "call_site_files": call_site_files,
        "config_examples": options.examples,
        "use_declared": options.use_declared,
    }
    with open(request_path, "w", encoding="utf-8") as handle:
        json.dump(request, handle)
    return Job(number, request_path, result_path, workdir, options.timeout)


def _answer(path: str, job: Job, ending: Ending) -> ModuleAnswer:
    answer = _read_answer(path, job.result)
    if ending.status:  # the process's fate outranks what its file says
        answer.failure, answer.status = ending.reason, ending.status
    if ending.status and answer.classes and "seconds" not in answer.classes[-1]:
        answer.failure += f" (while checking {answer.classes[-1]['qualname']})"
    return answer


def _read_answer(path: str, result_path: str) -> ModuleAnswer:
    answer = ModuleAnswer(path)
    try:
        with open(result_path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return answer
    if data.get("import") != "ok":
        answer.failure, answer.status = data.get("reason") or "failed to import", "import-failed"
        return answer
    answer.classes = data.get("classes", [])
    answer.confirmations = {int(index): (value[0], value[1]) for index, value in data.get("confirmations", {}).items()}
    if not data.get("done"):
        answer.failure, answer.status = "the check did not finish", "crashed"
    return answer


def _outcome(results: list, answers: dict[str, ModuleAnswer], selection_for: Callable[[str], RuleFilter],
             seconds: float) -> DynamicOutcome:
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
    return DynamicOutcome(updated, functions, unchecked, counts, summary_line(counts),
                          notices=unchecked_notices(functions))


def _unchecked_line(entry: dict) -> str:
    where = f"{entry['path']}:{entry['line']}" if entry["line"] else entry["path"]
    name = entry["function_class"] or "a Function class"
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
    return replace(finding, confirmation="unverified", evidence=answer.failure or "not checked")


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
    if answer.failure and not answer.classes:
        # The module never got as far as listing its classes: name them from the source.
        names = static_function_classes(result.path)
        if len(names) != result.function_classes:
            names = [(None, None)] * result.function_classes
        return [_entry(result.path, name, line, answer.status or "crashed", answer.failure) for name, line in names]
    entries = []
    for entry in answer.classes:
        status, reason = _class_status(entry, answer)
        entries.append(_entry(
            result.path, entry["qualname"], entry["line"], status, reason,
            inputs=entry.get("inputs"), ran=entry.get("ran", []), skipped=entry.get("skipped", []),
            runtime_findings=[f["code"] for f in entry.get("runtime_findings", [])],
            # runtime findings not reported on their own: the confirmed static finding explains them
            merged=[merged_line(merge) for merge in merges
                    if merge.runtime.line == entry["line"] and merge.runtime.function_class == entry["name"]],
            inputs_seconds=entry.get("inputs_seconds"), check_seconds=entry.get("check_seconds"),
            seconds=entry.get("seconds")))
    return entries


def _entry(path: str, name: Optional[str], line: Optional[int], status: str, reason: str, **details) -> dict:
    entry = {"path": path, "function_class": name, "line": line, "status": status, "reason": reason,
             "inputs": None, "ran": [], "skipped": [], "runtime_findings": [], "merged": [],
             "inputs_seconds": None, "check_seconds": None, "seconds": None}
    entry.update(details)
    return entry


def _class_status(entry: dict, answer: ModuleAnswer) -> tuple[str, str]:
    if "seconds" not in entry:  # the child ended while on this class
        return answer.status or "crashed", answer.failure or "the check did not finish"
    if entry.get("reason") == ABSTRACT_BASE:
        return "not-run", ABSTRACT_BASE
    if not entry.get("inputs"):
        return "no-inputs", _environment_reason(entry.get("reason") or "could not build inputs")
    if not entry.get("ran"):
        return "not-run", "; ".join(entry.get("skipped") or ()) or "no runtime check ran"
    return "checked", ""


def static_function_classes(path: str) -> list[tuple[str, int]]:
    """(qualified name, line) of the classes in ``path`` that subclass ``...Function`` (or such a
    class of the same file), in source order: the names of a module whose child never listed
    them. The caller checks the count against the static analysis's."""
    text = _read(path)
    try:
        tree = ast.parse(text or "")
    except (SyntaxError, ValueError):
        return []
    classes: list[tuple[str, str, int, list[str]]] = []  # (name, qualname, line, base names)

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                qualname = f"{prefix}{child.name}"
                bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in child.bases]
                classes.append((child.name, qualname, child.lineno, bases))
                visit(child, qualname + ".")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, f"{prefix}{child.name}.<locals>.")
            else:
                visit(child, prefix)

    visit(tree, "")
    functions = {"Function"}
    changed = True
    while changed:  # subclasses of this file's Function classes are Function classes too
        changed = False
        for name, _, _, bases in classes:
            if name not in functions and functions.intersection(bases):
                functions.add(name)
                changed = True
    return sorted(((qualname, line) for name, qualname, line, bases in classes if functions.intersection(bases)),
                  key=lambda item: item[1])


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
    not_checked = sum(counts["not_checked"].values())
    why = ", ".join(f"{number} {status}" for status, number in counts["not_checked"].items() if number)
    checked = f"{counts['checked']} checked" + (f", {not_checked} not checked ({why}; listed above)"
                                                 if not_checked else "")
    sources = ", ".join(f"{counts['inputs'][source]} {words}" for source, words in SOURCE_WORDS)
    confirmations = ", ".join(f"{number} {word}" for word, number in counts["static_findings"].items())
    merged = counts["merged"]
    merged_words = f" (and {merged} merged into the static findings that explain them)" if merged else ""
    return (f"dynamic: {total} Function class{'es' * (total != 1)}: {checked}; inputs built for {built} ({rate}): "
            f"{sources}; static findings: {confirmations}; runtime findings (AGL9xx): "
            f"{counts['runtime_findings']}{merged_words}; {counts['seconds']:.1f} s")


def write_report(path: str, outcome: DynamicOutcome) -> None:
    """``--dynamic-report FILE``: the per-Function entries and the summary counts, as JSON
    (docs/dynamic-report.schema.json)."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"version": REPORT_VERSION, "functions": outcome.functions, "summary": outcome.summary},
                  handle, indent=2)
        handle.write("\n")


REPORT_VERSION = 1
