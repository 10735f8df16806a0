"""The parent side of ``--dynamic``: one child process per module, answers mapped back to findings.

Never imports torch or the user's code itself. Each module with a Function class is handed to
``python -m autograd_lint.dynamic.child`` with a time limit, in a scratch directory that is also
its TMPDIR and the home of every cache torch may write (inductor, triton), so nothing lands in
the user's tree. A child that times out, dies on a signal or exits without an answer makes its
module ``unverified`` with the reason; the other modules go on.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Optional

from autograd_lint.dynamic.dedupe import Merge, RuntimeResult, merge_explained, merged_line
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


class DynamicError(Exception):
    """--dynamic cannot run at all (no torch, no GPU for --device cuda): one line, exit 2."""


def options_from(args, config, jobs: int) -> DynamicOptions:
    """The options of this run: command line first, then [tool.autograd-lint.dynamic]."""
    import importlib.util

    from autograd_lint.dynamic.options import DEFAULT_TIMEOUT

    if importlib.util.find_spec("torch") is None:
        raise DynamicError("--dynamic needs torch: pip install 'autograd-lint[dynamic]'")
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
    )


@dataclass
class ModuleAnswer:
    """What a child said about one module (or why it said nothing)."""

    path: str
    classes: list[dict] = field(default_factory=list)
    confirmations: dict[int, tuple[str, str]] = field(default_factory=dict)
    failure: str = ""  # "" when the module was imported and every check finished


@dataclass
class DynamicOutcome:
    results: list  # FileResults with confirmations and the AGL9xx findings
    functions: list[dict]  # one entry per Function class: inputs, checks, seconds
    warnings: list[str]  # "path: unverified: reason", one per module that could not be checked
    summary: str


def run_dynamic(results: list, selection_for: Callable[[str], RuleFilter], options: DynamicOptions,
                linted_files: Iterable[str]) -> DynamicOutcome:
    modules = [result for result in results if result.function_classes and not _unparsable(result)]
    call_site_files = _call_site_files(linted_files, options.root)
    scratch = tempfile.mkdtemp(prefix="autograd-lint-dynamic-")
    answers: dict[str, ModuleAnswer] = {}
    try:
        with module_progress(len(modules), options.show_progress) as progress, \
                ThreadPoolExecutor(max_workers=max(1, min(options.jobs, len(modules) or 1))) as pool:
            futures = {pool.submit(_run_child, result, options, call_site_files, scratch, number): result.path
                       for number, result in enumerate(modules)}
            for future, path in futures.items():
                answers[path] = future.result()
                progress.advance(path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _outcome(results, answers, selection_for)


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
    return environment


def _run_child(result, options: DynamicOptions, call_site_files: list[str], scratch: str,
               number: int) -> ModuleAnswer:
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
    failure = _spawn(request_path, result_path, workdir, options.timeout, _child_environment(scratch))
    answer = _read_answer(result.path, result_path)
    if failure:  # the process's fate outranks what its file says
        answer.failure = failure
    if failure and answer.classes and "seconds" not in answer.classes[-1]:
        answer.failure += f" (while checking {answer.classes[-1]['qualname']})"
    return answer


def _spawn(request_path: str, result_path: str, workdir: str, timeout: float, environment: dict) -> str:
    """Run the child; "" when it finished, else why not (as the user should read it)."""
    command = [sys.executable, "-m", "autograd_lint.dynamic.child", request_path, result_path]
    posix = os.name == "posix"
    process = subprocess.Popen(command, cwd=workdir, env=environment, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=posix)
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process, posix)
        process.communicate()
        return f"timed out after {timeout:g} s"
    code = process.returncode
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the module crashed the interpreter ({name})"
    if code != 0:
        last = _last_line(stderr)
        return f"the interpreter exited with status {code}" + (f": {last}" if last else "")
    if not os.path.exists(result_path):
        return "the child process gave no answer"
    return ""


def _kill(process: subprocess.Popen, posix: bool) -> None:
    try:
        if posix:
            os.killpg(process.pid, signal.SIGKILL)  # the child and anything the module started
        else:
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _last_line(stderr: Optional[bytes]) -> str:
    lines = (stderr or b"").decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:300] if lines else ""


def _read_answer(path: str, result_path: str) -> ModuleAnswer:
    answer = ModuleAnswer(path)
    try:
        with open(result_path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return answer
    if data.get("import") != "ok":
        answer.failure = data.get("reason") or "failed to import"
        return answer
    answer.classes = data.get("classes", [])
    answer.confirmations = {int(index): (value[0], value[1]) for index, value in data.get("confirmations", {}).items()}
    if not data.get("done"):
        answer.failure = "the check did not finish"
    return answer


def _outcome(results: list, answers: dict[str, ModuleAnswer], selection_for: Callable[[str], RuleFilter]) -> DynamicOutcome:
    updated, functions, warnings = [], [], []
    for result in results:
        answer = answers.get(result.path)
        if answer is not None and answer.failure:
            warnings.append(f"{result.path}: unverified: {answer.failure}")
        findings = [_confirmed(finding, index, answer, result) for index, finding in enumerate(result.findings)]
        if answer is not None:
            runtime = _runtime_findings(result.path, answer, selection_for(result.path))
            findings, kept, merges = merge_explained(findings, runtime)
            findings += kept
            functions += _function_entries(result, answer, merges)
        updated.append(replace(result, findings=findings))
    return DynamicOutcome(updated, functions, warnings, summary_line(functions, updated))


def _confirmed(finding: Finding, index: int, answer: Optional[ModuleAnswer], result) -> Finding:
    if answer is None:
        reason = ("the file could not be read or parsed" if _unparsable(result)
                  else "no Function class is defined in this file, so nothing of it was run")
        return replace(finding, confirmation="unverified", evidence=reason)
    if index in answer.confirmations:
        confirmation, evidence = answer.confirmations[index]
        return replace(finding, confirmation=confirmation, evidence=evidence)
    return replace(finding, confirmation="unverified", evidence=answer.failure or "not checked")


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
                message=f"{entry['qualname']}: {runtime['message']}",
                function_class=entry["name"], confirmation="confirmed", level=runtime.get("level", ""),
                evidence=f"with {inputs.get('source', '?')} inputs {inputs.get('detail', '')}".strip(),
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


def _function_entries(result, answer: ModuleAnswer, merges: list[Merge]) -> list[dict]:
    if answer.failure and not answer.classes:
        # The module never got as far as listing its classes: count the static ones as unverified.
        return [{"path": result.path, "function_class": None, "line": None, "inputs": None,
                 "reason": answer.failure} for _ in range(result.function_classes)]
    entries = []
    for entry in answer.classes:
        finished = "seconds" in entry
        entries.append({
            "path": result.path, "function_class": entry["qualname"], "line": entry["line"],
            "inputs": entry.get("inputs"),
            "reason": entry.get("reason") or ("" if finished else answer.failure),
            "ran": entry.get("ran", []), "skipped": entry.get("skipped", []),
            "runtime_findings": [f["code"] for f in entry.get("runtime_findings", [])],
            # runtime findings not reported on their own: the confirmed static finding explains them
            "merged": [merged_line(merge) for merge in merges
                       if merge.runtime.line == entry["line"] and merge.runtime.function_class == entry["name"]],
            "inputs_seconds": entry.get("inputs_seconds"), "check_seconds": entry.get("check_seconds"),
            "seconds": entry.get("seconds"),
        })
    return entries


SOURCE_WORDS = (("declared", "declared"), ("call-site", "call sites"), ("synthesized", "synthesized"))


def summary_line(functions: list[dict], results: list) -> str:
    total = len(functions)
    built = [entry for entry in functions if entry.get("inputs")]
    rate = f"{round(100 * len(built) / total)}%" if total else "n/a"
    sources = ", ".join(f"{sum(1 for e in built if e['inputs']['source'] == source)} {words}"
                        for source, words in SOURCE_WORDS)
    static = [f for result in results for f in result.findings if not f.code.startswith("AGL9")]
    counts = ", ".join(f"{sum(1 for f in static if f.confirmation == c)} {c}"
                       for c in ("confirmed", "not-reproduced", "unverified"))
    runtime = sum(1 for result in results for f in result.findings if f.code.startswith("AGL9"))
    merged = sum(len(entry.get("merged", ())) for entry in functions)
    merged_words = f" (and {merged} merged into the static findings that explain them)" if merged else ""
    return (f"dynamic: {total} Function class{'es' * (total != 1)}, inputs built for {len(built)} ({rate}): "
            f"{sources}; findings: {counts}; runtime findings (AGL9xx): {runtime}{merged_words}")


def write_report(path: str, outcome: DynamicOutcome) -> None:
    """``--dynamic-report FILE``: the per-Function entries and the summary line, as JSON."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"functions": outcome.functions, "summary": outcome.summary}, handle, indent=2)
        handle.write("\n")
