"""One module's dynamic pass, in its own process: ``python -m autograd_lint.dynamic.child REQUEST RESULT``.

REQUEST is a JSON file written by the runner (the module, its static findings, the call-site files,
the config's examples, the device, and the classes to ``skip``); RESULT is where this process
writes its answer, rewritten after each class, and RESULT.progress says which class it is on and
at which stage (``progress_path``), so that a module that later hangs or crashes still reports
what was done and which class it was on. The runner then
starts a fresh child for the module's remaining classes, with the done ones and the one that broke
the child in ``skip`` (``runner``). Each class is checked and its static findings confirmed in one
go, so that a resumed child never redoes a class.
The user's code may print anything to stdout/stderr: the protocol goes through the file only.
"""

from __future__ import annotations

import ast
import gc
import importlib
import importlib.util
import inspect
import itertools
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

NO_RUNTIME_CHECK = "no runtime check for this rule"


@dataclass
class ClassInputs:
    """What the input search gave for one class: the inputs the checks run on (``chosen``, an
    ``inputs.ChosenInputs``), why there are none (``reason``), and the candidates on which forward
    raised (``failures``, ``inputs.FailedInputs``, most trusted first), kept for the rules whose
    evidence is that very exception."""

    chosen: Any = None
    reason: str = ""
    failures: list = field(default_factory=list)


def _build_inputs(cls: type, module: Any, request: dict, entry: dict) -> ClassInputs:
    from autograd_lint.dynamic.inputs import choose_inputs

    try:
        outcome = choose_inputs(cls, module, request.get("call_site_files", []),
                                request.get("config_examples", {}), request["module_path"], "cpu",
                                use_declared=request.get("use_declared", True),
                                project_root=request.get("project_root", ""))
    except SystemExit as exit_:  # forward (or __init__ of an argument) ended the process: say so
        entry["reason"] = (f"its code {exit_call(exit_)} while its inputs were built (SystemExit: it would "
                           "end the process of whoever calls it)")
        entry["exited"] = True
        return ClassInputs(reason=entry["reason"])
    except BaseException as error:  # noqa: B036 - the user's code can raise anything
        entry["reason"] = f"building inputs raised {type(error).__name__}: {_first_line(error)}"
        blocked = _blocked(error, request)
        if blocked:
            entry["blocked"] = blocked
        return ClassInputs(reason=entry["reason"])
    if outcome.chosen is None:
        entry["reason"] = outcome.reason
    return ClassInputs(outcome.chosen, outcome.reason, outcome.failures)


def main(argv: list[str]) -> int:
    request_path, result_path = argv
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    sys.dont_write_bytecode = True  # never a __pycache__ in the user's tree
    result: dict = {"import": "failed", "reason": "", "classes": [], "confirmations": {}, "done": False}
    writer = _ResultWriter(result_path, result)
    if request.get("sandbox", "off") != "off":  # before torch (one interpreter each) and the user's code
        from autograd_lint.dynamic import sandbox

        try:
            result["sandbox"] = sandbox.enter(os.path.dirname(os.path.abspath(result_path)), request["sandbox"])
        except OSError as error:
            result["reason"] = f"--dynamic-sandbox require: not run, the sandbox could not be put on ({error})"
            writer.write()
            return 0

    try:
        import torch  # noqa: F401  (its own failure is reported like a failed import)
    except BaseException as error:  # noqa: B036 - anything, SystemExit included
        result["reason"] = f"cannot import torch: {type(error).__name__}: {error}"
        writer.write()
        return 0
    device = _device(request.get("device", "cpu"))
    if device is None:
        result["reason"] = "--device cuda, but torch.cuda.is_available() is False"
        writer.write()
        return 0

    try:
        module = import_module(request["module_path"], request["project_root"])
    except SystemExit as exit_:
        result["reason"] = f"{exit_call(exit_)} on import"
        writer.write()
        return 0
    except BaseException as error:  # noqa: B036 - the user's import can raise anything
        result["reason"] = f"failed to import: {type(error).__name__}: {_first_line(error)}"
        blocked = _blocked(error, request)
        if blocked:
            result["blocked"] = blocked
            result["reason"] = f"{blocked} ({result['reason']})"
        writer.write()
        return 0
    result["import"] = "ok"
    result["device"] = device
    writer.write()

    # Classes inside functions the import did not call, defined from their own source where that
    # makes the same class (kept here: nothing else refers to them, and gc.collect would take them).
    skip = {tuple(key) for key in request.get("skip", [])}  # done by an earlier child, or broke it
    # Which class this child is on, and at which stage, goes to a small file of its own
    # (``progress_path``): the result is rewritten whole, so once per class is enough for it.
    progress = _ResultWriter(progress_path(result_path), {})

    def making(entry: dict) -> None:  # a function runs to make this class: if it hangs, it is blamed
        progress.result.update(entry=entry, stage="checking")
        progress.write()

    from_source, result["not_definable"] = _define_nested(module, request, skip, making)
    gc.collect()  # a class whose name was bound again (a second `class F`) is gone, every time
    classes = _one_per_statement(function_classes(module), from_source)
    spans = {cls: _source_span(cls) for cls in classes}
    owners = [_owner(finding, classes, spans) for finding in request.get("findings", [])]
    confirm = _load_confirm()
    for cls in classes:
        if class_key(cls) in skip:
            continue
        entry = class_entry(cls)
        progress.result.update(entry=entry, stage="checking")  # if this class hangs or crashes, the runner knows
        progress.write()
        result["classes"].append(entry)
        if "forward" not in _own_or_inherited(cls):
            # Listed, not silently left out: its subclasses (checked on their own) supply forward.
            entry["reason"] = ABSTRACT_BASE
            entry["seconds"] = 0.0
            inputs = ClassInputs(reason=ABSTRACT_BASE)
        else:
            inputs = check_class(cls, module, request, device, entry)
            if cls in from_source and entry["inputs"]:
                entry["inputs"]["detail"] += f"; {from_source[cls]}"
        entry["stage"] = "confirming"
        writer.write()
        progress.result.update(entry={"name": entry["name"], "qualname": entry["qualname"], "line": entry["line"]},
                               stage="confirming")
        progress.write()
        confirmed = False
        for index, owner in enumerate(owners):
            if owner is cls:
                result["confirmations"][str(index)] = _confirm_one(
                    request["findings"][index], cls, inputs, confirm, device)
                confirmed = True
        entry["stage"] = "done"  # (in the result file at its next writing: the progress file says it now)
        if confirmed:
            writer.write()
        progress.result["stage"] = "done"
        progress.write()

    for index, owner in enumerate(owners):  # the findings of no class of this module: nothing runs
        if owner is None:
            result["confirmations"][str(index)] = _confirm_one(request["findings"][index], None, None, confirm, device)
    result["done"] = True
    writer.write()
    return 0


def progress_path(result_path: str) -> str:
    """``{"entry": the class's entry (or its name, qualname and line), "stage": "checking",
    "confirming" or "done"}``: the class this child is on. Every class of the result file before
    it is done."""
    return result_path + ".progress"


def class_key(cls: type) -> tuple[str, int]:
    """How the runner names a class across children: qualified name and source line."""
    return cls.__qualname__, _source_line(cls) or 1


def _source_span(cls: type) -> tuple[int, int]:
    """First and last source line of ``cls`` ((0, 0) when its source cannot be read)."""
    node = class_node(cls)
    if node is not None:
        return node.lineno, node.end_lineno or node.lineno
    try:
        lines, start = inspect.getsourcelines(cls)
    except (OSError, TypeError, IndexError):
        return 0, 0
    return start, start + len(lines) - 1


def _owner(finding: dict, classes: list[type], spans: dict) -> Optional[type]:
    """The class a static finding is about: named as the finding names it, the one whose source
    holds the finding's line when two classes share the name, else the first of that name."""
    name = finding.get("function_class")
    if not name or finding.get("code") == "AGL000":
        return None
    named = [cls for cls in classes if name in (cls.__name__, cls.__qualname__)]
    line = finding.get("line") or 0
    around = [cls for cls in named if spans[cls][0] <= line <= spans[cls][1]]
    return (around or named or [None])[0]


def check_class(cls: type, module: Any, request: dict, device: str, entry: dict) -> ClassInputs:
    """Build inputs for ``cls`` and run the runtime checks on them, recording both in ``entry``
    (``class_entry``); the fork server runs it once on its own Function to warm up."""
    started = time.perf_counter()
    inputs = _build_inputs(cls, module, request, entry)
    if inputs.chosen is not None:
        chosen = inputs.chosen
        entry["inputs"] = {"source": chosen.source, "detail": chosen.detail, "shapes": chosen.shapes}
        entry["inputs_seconds"] = round(time.perf_counter() - started, 4)
        _run_runtime_checks(cls, chosen, device, entry, _package_inputs(cls, module, request))
    entry["seconds"] = round(time.perf_counter() - started, 4)
    return inputs


def _package_inputs(cls: type, module: Any, request: dict) -> Callable[[], Optional[Any]]:
    """What the package itself passes to ``apply``, asked for only where a guess failed: the first
    candidate of its documented examples, then of its callers (``callers``), or None."""

    def first() -> Optional[Any]:
        from autograd_lint.dynamic import callers
        from autograd_lint.dynamic.inputs import SEARCH_BUDGET_S, SEED, make_inputs_factory

        files = request.get("call_site_files", [])
        deadline = time.monotonic() + SEARCH_BUDGET_S
        return next(itertools.chain(
            callers.example_candidates(cls, module, files, SEED, deadline),
            callers.candidates(cls, module, files, SEED, lambda recipe: make_inputs_factory(recipe, "cpu"), deadline)),
            None)

    return first


def _device(requested: str) -> Optional[str]:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        return None
    return requested


def import_module(path: str, project_root: str) -> Any:
    """Import the file at ``path`` as its dotted name when it is in a package, else by its stem,
    with its directory (or its top package's parent) and the project root importable. Where its
    relative imports reach above the packages that have an ``__init__.py``, through directories
    that have none (namespace packages inside a package: ``pkg/sparse/linalg/solvers/``, where
    only ``pkg/`` and ``solvers/`` have one, or a namespace package with none at all, installed in
    a directory of the import path), it is imported again under the longer name."""
    search_path = list(sys.path)
    try:
        return _import_module(path, project_root, through_namespaces=False)
    except ImportError as error:
        if "relative import" not in str(error):
            raise
        roots = tuple(os.path.abspath(entry) for entry in [*search_path, project_root] if entry)
        longer = _package_parts(os.path.abspath(path), through_namespaces=True, roots=roots)
        if longer == _package_parts(os.path.abspath(path), through_namespaces=False):
            raise
        # The directory the first try put on sys.path must not shadow anything of the second. The
        # modules it imported stay (a compiled extension cannot load twice in one process; those
        # it imported under short names, `solvers`, are not what the second imports).
        sys.path[:] = search_path
        return _import_module(path, project_root, through_namespaces=True, roots=roots)


def _package_parts(path: str, through_namespaces: bool, roots: tuple[str, ...] = ()) -> tuple[list[str], str]:
    """The dotted name's parts of the module at ``path``, and the directory above its top
    package. ``through_namespaces``: go on up through directories without an ``__init__.py``
    (whose names are identifiers) to a package above them, and on from there, or to one of
    ``roots`` (the import path: a namespace package with no ``__init__.py`` at all, installed in
    site-packages, starts there)."""
    directory, filename = os.path.split(path)
    stem = os.path.splitext(filename)[0]
    parts = [] if stem == "__init__" else [stem]
    top = directory
    while True:
        while os.path.isfile(os.path.join(top, "__init__.py")):
            parts.insert(0, os.path.basename(top))
            top = os.path.dirname(top)
        if not through_namespaces:
            return parts, top
        gap, above = [], top
        while not os.path.isfile(os.path.join(above, "__init__.py")) and len(gap) < 8:
            if above in roots and gap:
                return gap + parts, above
            name = os.path.basename(above)
            if not name.isidentifier() or os.path.dirname(above) == above:
                return parts, top
            gap.insert(0, name)
            above = os.path.dirname(above)
        if not os.path.isfile(os.path.join(above, "__init__.py")):
            return parts, top
        parts = gap + parts
        top = above


def _import_module(path: str, project_root: str, through_namespaces: bool, roots: tuple[str, ...] = ()) -> Any:
    path = os.path.abspath(path)
    directory, filename = os.path.split(path)
    stem = os.path.splitext(filename)[0]
    parts, top = _package_parts(path, through_namespaces, roots)
    # A module of a package is imported from its top package's parent only: with the package's
    # own directory on sys.path, its modules would shadow the standard library's
    # (torch_geometric/profile/ hid `profile`, which cProfile imports).
    in_package = len(parts) > 1 or stem == "__init__"
    for entry in (os.path.abspath(project_root), top) if in_package else (os.path.abspath(project_root), directory):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    if len(parts) > 1 or stem == "__init__":
        module = importlib.import_module(".".join(parts))
        if os.path.samefile(getattr(module, "__file__", "") or path, path):
            return module
    name = stem if stem not in sys.modules and stem not in getattr(sys, "stdlib_module_names", ()) else f"_autograd_lint_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _define_nested(module: Any, request: dict, skip: set, making: Callable[[dict], None]) -> tuple[dict, dict]:
    """The Function classes the static scan found inside functions, which the import did not
    define, each defined from its own source where it reads no name of those functions, or only
    parameters with constant defaults (``nested``), else made by calling the function that holds
    it (``callers.made_by_calling``): {class: a note for its inputs}; and for the others,
    {"name:line": why not}. ``making`` is told before a function runs to make one (``skip``: the
    classes an earlier child hung on)."""
    static = {(name, line) for name, line in request.get("static_classes", [])}
    filename = getattr(module, "__file__", None)
    if not static or not filename:
        return {}, {}
    defined = {(cls.__name__, _source_line(cls)) for cls in function_classes(module)}
    if static <= defined:  # the import defined them all: nothing to read
        return {}, {}
    from autograd_lint.dynamic import nested

    try:
        with open(filename, encoding="utf-8") as handle:
            source = handle.read()
    except (OSError, UnicodeDecodeError):
        return {}, {}
    made: dict = {}
    refused: dict = {}
    for found in nested.nested_classes(source, filename):
        key = (found.node.name, found.node.lineno)
        if key not in static or key in defined:
            continue
        read = nested.names_read_from_functions(found, source)
        if read is None:
            continue
        read.discard(found.node.name)  # its own name: the class, inside the function as here
        bindings = nested.default_bindings(found, read, module) if read else {}
        if bindings is None:  # it reads what only a run of its function gives: run it
            by_calling = None if (found.qualname, found.node.lineno) in skip else \
                _made_by_calling(found, module, request, filename, making)
            if by_calling is not None:
                cls, how = by_calling
                made[cls] = how
                continue
            names = ", ".join(f"`{name}`" for name in sorted(read))
            refused[f"{found.node.name}:{found.node.lineno}"] = f"its code reads {names} of `{found.function}`" + (
                ", and no call of it (or of a function of the package that calls it) with guessed arguments "
                "reached the class" if found.holder is not None else "")
            continue
        try:
            cls = nested.define(found, source, module, bindings)
        except BaseException as error:  # noqa: B036 - its decorators and bases are the user's code
            refused[f"{found.node.name}:{found.node.lineno}"] = (
                f"defining it from its source raised {type(error).__name__}: {_first_line(error)}")
            continue
        if bindings:
            values = ", ".join(f"`{name}={value!r}`" for name, value in sorted(bindings.items()))
            made[cls] = (f"defined from its source: `{found.function}`, which holds it, was not called; "
                         f"the parameters the class reads have their defaults ({values})")
        else:
            made[cls] = (f"defined from its source: `{found.function}`, which holds it, was not called, "
                         "and the class reads no name of it")
    return made, refused


def _made_by_calling(found: Any, module: Any, request: dict, filename: str,
                     making: Callable[[dict], None]) -> Optional[tuple[type, str]]:
    """``callers.made_by_calling`` for a nested class that reads its function's names; the
    arguments its first ``apply`` got are its first candidate (``callers.MADE_WITH``)."""
    from autograd_lint.dynamic import callers
    from autograd_lint.dynamic.inputs import SEARCH_BUDGET_S, SEED, make_inputs_factory

    if found.holder is None:
        return None
    node = found.node
    making({"name": node.name, "qualname": found.qualname, "line": node.lineno, "column": node.col_offset + 1,
            "inputs": None, "reason": "", "runtime_findings": [], "ran": [], "skipped": []})
    try:
        outcome = callers.made_by_calling(
            (filename, node.lineno, node.end_lineno or node.lineno, node.name), found.holder, module,
            request.get("call_site_files", []), lambda recipe: make_inputs_factory(recipe, "cpu"), SEED,
            time.monotonic() + SEARCH_BUDGET_S)
    except (Exception, SystemExit):  # noqa: BLE001 - the package's code, called with guesses
        return None
    if outcome is None:
        return None
    cls, how, candidate = outcome
    if candidate is not None:
        callers.MADE_WITH[cls] = candidate
    return cls, f"{how}, since the class reads its names"


ABSTRACT_BASE = "an abstract base: it defines no forward (its subclasses do, and are checked on their own)"


def function_classes(module: Any) -> list[type]:
    """The Function classes the module itself defines (nested ones too), in source order; those
    without a forward of their own or inherited (abstract bases) too, so that the report lists them."""
    import torch

    found, stack, seen = [], [torch.autograd.Function], set()
    while stack:
        for subclass in stack.pop().__subclasses__():
            if subclass not in seen:
                seen.add(subclass)
                stack.append(subclass)
                if subclass.__module__ == module.__name__:
                    found.append(subclass)
    return sorted(found, key=lambda cls: (_source_line(cls), cls.__qualname__))


def _one_per_statement(classes: list[type], preferred: dict) -> list[type]:
    """One class per class statement (qualified name and line): a factory called more than once
    (by the module, or to make its class) makes the same class again each time. The one the run
    defined or made itself (``preferred``) is kept, else the first."""
    chosen: dict[tuple[str, int], type] = {}
    for cls in classes:
        key = class_key(cls)
        if key not in chosen or (cls in preferred and chosen[key] not in preferred):
            chosen[key] = cls
    return [cls for cls in classes if chosen[class_key(cls)] is cls]


def _own_or_inherited(cls: type) -> set[str]:
    import torch

    base = torch.autograd.Function
    return {"forward"} if getattr(cls, "forward", None) is not getattr(base, "forward", None) else set()


def _source_line(cls: type) -> int:
    node = class_node(cls)
    if node is not None:
        return node.lineno
    try:
        return inspect.getsourcelines(cls)[1]
    except (OSError, TypeError, IndexError):
        return 0


_CLASS_STATEMENTS: dict[str, dict[str, list[ast.ClassDef]]] = {}  # file -> class name -> its statements


def class_node(cls: type) -> Optional[ast.ClassDef]:
    """The ``class`` statement that made ``cls``, found from its own methods' code: inspect finds
    a class by its qualified name, and so gives the first of two classes that share one (``class
    Scale`` under an ``if`` and again under its ``else``). None when no method of its own was
    written inside a class statement of that name in its module's file."""
    filename = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if not filename:
        return None
    lines = []
    for value in vars(cls).values():
        code = getattr(getattr(value, "__func__", value), "__code__", None)  # staticmethod, classmethod
        if code is not None and _same_file(code.co_filename, filename):
            lines.append(code.co_firstlineno)
    if not lines:
        return None
    statements = _class_statements(filename).get(cls.__name__, [])
    around = [node for node in statements
              if any(node.lineno <= line <= (node.end_lineno or node.lineno) for line in lines)]
    return max(around, key=lambda node: node.lineno, default=None)  # the innermost


def _class_statements(filename: str) -> dict[str, list[ast.ClassDef]]:
    if filename not in _CLASS_STATEMENTS:
        found: dict[str, list[ast.ClassDef]] = {}
        try:
            with open(filename, encoding="utf-8", errors="replace") as handle:
                tree = ast.parse(handle.read())
        except (OSError, SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(node)
        _CLASS_STATEMENTS[filename] = found
    return _CLASS_STATEMENTS[filename]


def _same_file(first: str, second: str) -> bool:
    try:
        return first == second or os.path.samefile(first, second)
    except OSError:
        return False


def class_entry(cls: type) -> dict:
    line = _source_line(cls)
    node = class_node(cls)
    column = node.col_offset + 1 if node is not None else 1
    if node is None:
        try:
            lines = inspect.getsourcelines(cls)[0]
            column = len(lines[0]) - len(lines[0].lstrip()) + 1 if lines else 1
        except (OSError, TypeError):
            pass
    return {"name": cls.__name__, "qualname": cls.__qualname__, "line": line or 1, "column": column,
            "inputs": None, "reason": "", "runtime_findings": [], "ran": [], "skipped": []}


def _run_runtime_checks(cls: type, inputs: Any, device: str, entry: dict,
                        package_inputs: Callable[[], Optional[Any]] = lambda: None) -> None:
    from autograd_lint.dynamic import checks
    from autograd_lint.dynamic.inputs import forward_problem, make_inputs_factory
    from autograd_lint.dynamic.synthesis import forward_parameters

    if not checks.has_derivative(cls):
        entry["skipped"].append("all checks: no backward or vjp (an abstract base?)")
        return
    names = [parameter.name for parameter in forward_parameters(cls) or []]
    started = time.perf_counter()
    try:
        cpu = checks.run_checks(cls, inputs.make_inputs, names, inputs.backward_error)
        found = list(cpu.findings)
        entry["ran"], entry["skipped"] = cpu.ran, cpu.skipped
        if device == "cuda":
            make_cuda = make_inputs_factory(inputs.recipe, "cuda")
            problem = forward_problem(cls, make_cuda)
            if problem is not None:
                found.append(checks.RuntimeFinding("AGL904", f"passes on CPU, fails on CUDA: {problem}"))
            else:
                found += checks.compare_devices(cpu, checks.run_checks(cls, make_cuda, names, inputs.backward_error))
            entry["ran"].append("cuda")
    except SystemExit as exit_:
        entry["skipped"].append(f"checks: the class's code {exit_call(exit_)}, which ends the process")
        entry["exited"] = True
        found = []
    except BaseException as error:  # noqa: B036 - the user's code under check can raise anything
        entry["skipped"].append(f"checks raised {type(error).__name__}: {_first_line(error)}")
        found = []
    entry["check_seconds"] = round(time.perf_counter() - started, 4)
    found = [_uncertain(f, inputs.guessed_constants) for f in found]
    found = _uncertain_on_guesses(cls, inputs, names, found, entry, package_inputs)
    entry["runtime_findings"] = [{"code": f.code, "message": f.message, "kinds": list(f.kinds), "level": f.level}
                                 for f in found]


# A wrong gradient compared with finite differences: on inputs whose constants were guessed, the
# comparison may judge the guess (a filter bank of the wrong shape) rather than the formula.
_JUDGED_BY_GRADIENTS = frozenset({"AGL901", "AGL902"})


def _uncertain(finding: Any, guessed_constants: tuple[str, ...]) -> Any:
    """A warning, not an error, when the inputs hold guessed constants (``Candidate.guessed_constants``):
    an unknown never makes an error. ``@example`` inputs make it certain again."""
    if not guessed_constants or finding.code not in _JUDGED_BY_GRADIENTS:
        return finding
    names = ", ".join(f"`{name}`" for name in guessed_constants)
    were = "were guessed as tensors" if len(guessed_constants) > 1 else "was guessed as a tensor"
    return replace(finding, level="warning",
                   message=f"{finding.message} (not certain: {names} {were} that backward gives no gradient, "
                           "whose shape may not be what the class expects; declare an @example to check it on "
                           "real inputs)")


def _input_names(indices: tuple[int, ...], names: list[str]) -> str:
    return ", ".join(f"`{names[index]}`" if index < len(names) else f"input {index}" for index in indices)


def _variadic(cls: type) -> str:
    """The name of forward's ``*args`` parameter, or ``""``."""
    from autograd_lint.dynamic.synthesis import forward_parameters

    return next((parameter.name for parameter in forward_parameters(cls) or ()
                 if parameter.kind == inspect.Parameter.VAR_POSITIONAL), "")


def _uncertain_on_guesses(cls: type, inputs: Any, names: list[str], found: list, entry: dict,
                          package_inputs: Callable[[], Optional[Any]] = lambda: None) -> list:
    """On synthesized inputs, the errors that a guess, not backward, may have caused become
    warnings: an unknown never makes an error.

    - AGL901 when the guessed numbers (``tau=0.5``, ``damping=0.5``) all set to 1.0 make
      gradcheck pass: backward scales by a hyper-parameter (a damping factor, a surrogate's
      slope) whose real value the run does not know.
    - AGL901 when an input that gradcheck fails for is one forward does not read, yet backward
      gives a gradient (``checks.GradcheckOutcome.unread``): a coupling the guess lacks (``factor``
      must be the factorization of ``a``), or a surrogate's gradient for a parameter.
    - AGL901 when gradcheck disagrees only on elements of an input that forward ignores entirely
      (a padding the callers zero), see ``checks._fails_only_where_ignored``.
    - AGL901 when gradcheck passes once the guessed square matrices are symmetric: backward
      derived for a covariance (a matrix square root by Newton-Schulz iterations).
    - AGL903 when the only problem is a complex gradient for an input guessed real.
    - AGL901, AGL902 on inputs made complex because backward returned complex gradients for the
      real ones (``inputs.MADE_COMPLEX``): the class may be meant for real inputs only. An AGL901
      that gradcheck confirms on real values promoted to complex inside (the gradient a wrapper
      that promotes its argument gets) stays an error.
    - AGL903 when the only problem is the number of gradients and forward takes ``*args``: how
      many to pass there was guessed (a reversible block's ``*params`` are its modules').
    - AGL903 when every problem is a gradient shaped for a smaller input that broadcasts to the
      guessed one (a time constant guessed (3, 4) for which the class returns a 0-d gradient, as
      for the 0-d parameter it is always given). Axes swapped, or any other shape, stay errors."""
    if inputs.source != "synthesized":
        return found
    from autograd_lint.dynamic.inputs import MADE_COMPLEX

    if any(finding.code in _GRADCHECK_FAILED for finding in found) and _passes_when_converged(cls, inputs, names, entry):
        # An iterative forward stopped early by the guessed settings (two iterations): its implicit
        # gradient fails gradcheck, or its output steps like a straight-through estimator's; once
        # the iterations settle, gradcheck passes, so neither says anything.
        found = [finding for finding in found if finding.code not in _GRADCHECK_FAILED]
        entry["skipped"] = [*(skipped for skipped in entry["skipped"] if not skipped.startswith("gradgradcheck")),
                            "gradgradcheck: the first derivative is right only once the iterations settle"]
    stand_ins = _stand_ins_passed(inputs, names)
    if stand_ins:
        found = [_judged_on_stand_ins(finding, stand_ins) for finding in found]
    result = []
    for finding in found:
        if finding.level in ("warning", "info"):
            result.append(finding)
        elif finding.code == "AGL903" and "a complex gradient for a real input" in finding.message \
                and all(kind == "dtype" for kind in finding.kinds):
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: the input was guessed real, and backward computes in complex "
                "numbers: the class may be meant for a complex input; declare an @example to check it on real "
                "inputs)")))
        elif finding.code in _JUDGED_BY_GRADIENTS and MADE_COMPLEX in inputs.detail:
            promoted = _promoted_reals_verdict(cls, inputs, entry) if finding.code == "AGL901" else None
            if promoted is False:
                result.append(replace(finding, message=(
                    f"{finding.message}; it fails as well on the real values made complex inside forward's call, "
                    "which is the gradient a wrapper that promotes a real argument gets: that gradient is wrong")))
                continue
            passes = ("; on real values made complex inside forward's call, as a wrapper that promotes a real "
                      "argument passes them, gradcheck passes") if promoted else ""
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: backward returned complex gradients for the guessed real "
                f"inputs, so they were made complex for gradcheck, and the class may be meant for real inputs "
                f"only{passes}; declare an @example to check it on real inputs)")))
        elif finding.code == "AGL903" and _gradients_for_guessed_numbers_only(cls, inputs, names, finding):
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: the run guessed a number there from the parameter's name, "
                "and backward gives it a gradient, so the class may take a tensor there; declare an @example "
                "to check it on real inputs)")))
        elif finding.code == "AGL903" and finding.kinds == ("count",) and _variadic(cls):
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: forward takes `*{_variadic(cls)}`, and how many arguments to "
                "pass there was guessed; backward's count may follow what the callers pass, a module's "
                "parameters say; declare an @example to check it on real inputs)")))
        elif finding.code == "AGL903" and finding.smaller_inputs_only:
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: the inputs' shapes were guessed, and the class may be "
                "meant for that smaller shape; declare an @example to check it on real inputs)")))
        elif finding.code == "AGL901" and finding.symmetric_passes:
            square = _input_names(finding.symmetric_passes, names)
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: gradcheck passes once the guessed square matrix {square} is "
                "symmetric, so backward may be derived for symmetric inputs (a covariance, a Gram matrix), as "
                "the class's callers may always pass; declare an @example to check it on real inputs)")))
        elif finding.code == "AGL901" and finding.ignored_elements:
            ignored = _input_names(finding.ignored_elements, names)
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: gradcheck disagrees only on elements of {ignored} that forward "
                "ignores, changing them changes nothing, yet backward gives them a gradient: the class may presume "
                "them fixed (a zero padding its callers add); declare an @example to check it on real inputs)")))
        elif finding.code == "AGL901" and finding.unread_inputs:
            unread = _input_names(finding.unread_inputs, names)
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: forward does not read {unread}, yet backward gives it a "
                "gradient: the class may presume a coupling with another input that the guessed inputs lack "
                "(a factorization of a matrix beside it) or pass a surrogate's gradient on purpose; declare an "
                "@example to check it on real inputs)")))
        elif finding.code == "AGL901" and (passed_on := _passes_on_the_package_s_inputs(cls, inputs, names, entry,
                                                                                          package_inputs)):
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: on what the package itself passes ({passed_on}) "
                "gradcheck does not fail, so the guessed inputs may be ones the class is never given, such as an "
                "input without the padding its callers add; declare an @example to check it on real inputs)")))
        elif finding.code == "AGL901" and _passes_with_unit_numbers(cls, inputs, names, entry):
            guessed = _guessed_numbers(cls, inputs.make_inputs(), names)
            numbers = ", ".join(f"`{name}`" for index, name in enumerate(names) if index in guessed)
            result.append(replace(finding, level="warning", message=(
                f"{finding.message} (not certain: with the guessed numbers {numbers} all 1.0 gradcheck "
                "passes, so the failure may be the guess's: a hyper-parameter that backward scales by, or a "
                "regularization too small for forward's iterations to settle, whose real value this run does "
                "not know; declare an @example to check it on real inputs)")))
        else:
            result.append(finding)
    return result


def _promoted_reals_verdict(cls: type, inputs: Any, entry: dict) -> Optional[bool]:
    """gradcheck's verdict with the inputs made complex given real and promoted inside
    (``checks.promoted_verdict``); None when it cannot tell."""
    from autograd_lint.dynamic import checks

    try:
        verdict = checks.promoted_verdict(cls, inputs.make_inputs)
    except BaseException:  # noqa: B036 - the user's code under check can raise anything
        return None
    if verdict is not None:
        entry["ran"].append("gradcheck on real values made complex inside")
    return verdict


def _gradients_for_guessed_numbers_only(cls: type, inputs: Any, names: list[str], finding: Any) -> bool:
    """Whether AGL903's only problems are gradients for inputs that the run guessed as numbers
    (``_guessed_numbers``): a tensor may belong there (a cost matrix named ``c``)."""
    if not finding.non_tensor_inputs:
        return False
    try:
        guessed = _guessed_numbers(cls, inputs.make_inputs(), names)
    except Exception:  # noqa: BLE001 - inputs that no longer build: no doubt to add
        return False
    return set(finding.non_tensor_inputs) <= guessed


def _guessed_numbers(cls: type, values: tuple, names: list[str]) -> set[int]:
    """The positions of the float arguments that are not 1.0 and not forward's own default for
    that parameter (a tolerance or a step forward declares is the author's value, not a guess)."""
    from autograd_lint.dynamic.synthesis import forward_parameters

    defaults = {parameter.name: parameter.default for parameter in forward_parameters(cls) or ()
                if parameter.default is not inspect.Parameter.empty}
    return {index for index, value in enumerate(values)
            if isinstance(value, float) and value != 1.0
            and not (index < len(names) and names[index] in defaults and defaults[names[index]] == value)}


# Parameters that set how long an iterative forward runs (a bisection's `n` where forward loops
# `range(n)`, a solver's `max_iter`) and when it stops (`tol`).
_ITERATION_COUNT = re.compile(r"^(?:n_?iters?|max_?iters?|maxiter|num_?iters?|iters?|iterations|n_iterations|"
                              r"max_iterations|num_iterations|n_?steps|max_?steps|num_?steps)$")
_TOLERANCE = re.compile(r"^(?:tol|tolerance|atol|rtol|abs_?tol|rel_?tol|threshold_tol)$")
CONVERGED_COUNT, CONVERGED_TOLERANCE = 60, 1e-12
# gradcheck failed: an AGL901, or an AGL908 (a by-design kind read from the failure). A second
# look that ends in either has not passed.
_GRADCHECK_FAILED = ("AGL901", "AGL908")


def _iteration_settings(cls: type, values: tuple, names: list[str]) -> dict[int, Any]:
    """The positions of the guessed iteration counts and tolerances, and the value that lets
    forward's iterations settle; a number that forward declares as its default, or that is not a
    guess, is left alone. A bare ``n`` counts where forward loops ``range(n)``."""
    from autograd_lint.dynamic.synthesis import forward_function, forward_parameters

    defaults = {parameter.name: parameter.default for parameter in forward_parameters(cls) or ()
                if parameter.default is not inspect.Parameter.empty}
    function = forward_function(cls)
    looped = {_range_stop(node) for node in (ast.walk(function) if function is not None else ())
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"}
    settings: dict[int, Any] = {}
    for index, value in enumerate(values):
        name = names[index] if index < len(names) else ""
        if name in defaults and defaults[name] == value:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and (_ITERATION_COUNT.match(name) or name in looped):
            settings[index] = CONVERGED_COUNT
        elif isinstance(value, float) and _TOLERANCE.match(name):
            settings[index] = CONVERGED_TOLERANCE
    return settings


def _passes_on_the_package_s_inputs(cls: type, inputs: Any, names: list[str], entry: dict,
                                    package_inputs: Callable[[], Optional[Any]]) -> Optional[str]:
    """gradcheck on what the package's own examples or callers pass to ``apply`` (``package_inputs``),
    where the inputs were guessed from the signature alone: where it passes there, or fails only by
    design (AGL908: the package's estimator), those inputs' label (``expm()``, ``the docstring
    example of X``) and the kind, else None."""
    from autograd_lint.dynamic import checks
    from autograd_lint.dynamic.inputs import forward_problem, make_inputs_factory

    if inputs.detail.startswith("through ") or "docstring example" in inputs.detail:
        return None  # the package's own inputs already
    try:
        candidate = package_inputs()
        if candidate is None:
            return None
        make = make_inputs_factory(candidate.recipe, "cpu")
        if forward_problem(cls, make) is not None:
            return None
        again = checks.run_checks(cls, make, names, "")
    except BaseException:  # noqa: B036 - the user's code under check can raise anything
        return None
    label = candidate.detail.split(",")[0].removeprefix("through ")
    entry["ran"].append(f"gradcheck on what the package passes ({label})")
    # There, a by-design kind (AGL908) is the package's own estimator at work, not a failure.
    by_design = [f for f in again.findings if f.code == "AGL908"]
    passed = "gradcheck" in again.ran and not any(f.code == "AGL901" for f in again.findings)
    return (f"{label}, where the gradient is by design: {by_design[0].message.split(':')[0]}" if by_design else label) \
        if passed else None


def _stand_ins_passed(inputs: Any, names: list[str]) -> str:
    """The stand-in callables among the inputs, as ``func=identity`` (empty where there is none)."""
    from autograd_lint.dynamic.synthesis import is_stand_in

    try:
        values = inputs.make_inputs()
    except BaseException:  # noqa: B036 - the inputs were built once already; a second build may still fail
        return ""
    return ", ".join(f"`{names[index] if index < len(names) else index}`={value!r}"
                     for index, value in enumerate(values) if is_stand_in(value))


def _judged_on_stand_ins(finding: Any, stand_ins: str) -> Any:
    """A gradient finding on inputs with a stand-in callable: the class's own function (a circuit,
    an operator) may be what backward's formula assumes, so an AGL901 is a warning; and a
    "gradient modifier" read from a forward that returned its input is the identity's doing, not
    the class's design: an AGL901 warning too, not an AGL908 label."""
    from autograd_lint.dynamic.by_design import MODIFIER

    doubt = (f" (not certain: a stand-in callable was passed for {stand_ins}, and backward may assume the "
             "package's own function; declare an @example to check it on real inputs)")
    if finding.code == "AGL901" and finding.level not in ("warning", "info"):
        return replace(finding, level="warning", message=finding.message + doubt)
    if finding.code == "AGL908" and MODIFIER in finding.message:
        return replace(finding, code="AGL901", level="warning",
                       message=f"gradcheck failed, on a forward that returned its input unchanged{doubt}")
    return finding


def _range_stop(call: ast.Call) -> Optional[str]:
    """The name of a ``range(...)`` call's stop, where it is one: ``range(n)``, ``range(1, n)``."""
    stop = call.args[0] if len(call.args) == 1 else call.args[1] if len(call.args) > 1 else None
    return stop.id if isinstance(stop, ast.Name) else None


def _passes_when_converged(cls: type, inputs: Any, names: list[str], entry: dict) -> bool:
    """gradcheck, again, with the guessed iteration counts at 60 and tolerances at 1e-12
    (``_iteration_settings``): an implicit or adjoint backward is exact only where forward's
    iterations have settled, and two iterations of a guess do not. False when there are no such
    settings, or when anything raises."""
    from autograd_lint.dynamic import checks

    settings = _iteration_settings(cls, inputs.make_inputs(), names)
    if not settings:
        return False

    def converged_inputs() -> tuple:
        return tuple(settings.get(index, value) for index, value in enumerate(inputs.make_inputs()))

    converged_inputs.structures = getattr(inputs.make_inputs, "structures", ())  # type: ignore[attr-defined]
    try:
        again = checks.run_checks(cls, converged_inputs, names, inputs.backward_error)
    except BaseException:  # noqa: B036 - the user's code under check can raise anything
        return False
    shown = ", ".join(f"{names[index]}={value}" for index, value in settings.items() if index < len(names))
    entry["ran"].append(f"gradcheck with the iterations left to settle ({shown})")
    return "gradcheck" in again.ran and not any(f.code in _GRADCHECK_FAILED for f in again.findings)


def _passes_with_unit_numbers(cls: type, inputs: Any, names: list[str], entry: dict) -> bool:
    """gradcheck, again, with every guessed float argument (``_guessed_numbers``) set to 1.0
    (nothing else changed); False when there is none, or when anything raises."""
    from autograd_lint.dynamic import checks

    guessed = _guessed_numbers(cls, inputs.make_inputs(), names)
    if not guessed:
        return False

    def unit_inputs() -> tuple:
        return tuple(1.0 if index in guessed else value for index, value in enumerate(inputs.make_inputs()))

    # the same structured set (dynamic/structure.py), so the check is judged as the first was
    unit_inputs.structures = getattr(inputs.make_inputs, "structures", ())  # type: ignore[attr-defined]

    try:
        again = checks.run_checks(cls, unit_inputs, names, inputs.backward_error)
    except BaseException:  # noqa: B036 - the user's code under check can raise anything
        return False
    entry["ran"].append("gradcheck with the guessed numbers at 1.0")
    return "gradcheck" in again.ran and not any(f.code in _GRADCHECK_FAILED for f in again.findings)


def _load_confirm() -> Optional[tuple[frozenset, frozenset, Callable]]:
    try:
        from autograd_lint.dynamic.confirm import (
            CONFIRMABLE_CODES, SHOWN_BY_A_RAISING_FORWARD, confirm_finding,
        )
    except ImportError:
        return None
    return CONFIRMABLE_CODES, SHOWN_BY_A_RAISING_FORWARD, confirm_finding


def _confirm_one(finding: dict, cls: Optional[type], inputs: Optional[ClassInputs], confirm: Optional[tuple],
                 device: str) -> list:
    name = finding.get("function_class")
    code = finding.get("code")
    if code == "AGL000":
        return ["unverified", "the file could not be read or parsed"]
    if not name:
        return ["unverified", "not tied to a Function class"]
    if cls is None:
        return ["unverified", f"{name} is not a Function class defined in this module"]
    inputs = inputs or ClassInputs(reason="could not build inputs")
    if inputs.chosen is None and not inputs.failures:
        return ["unverified", inputs.reason or "could not build inputs"]
    if confirm is None:
        return ["unverified", NO_RUNTIME_CHECK]
    codes, shown_by_raising_forward, confirm_finding = confirm
    if code not in codes:
        return ["unverified", f"no runtime check for {code}"]
    if inputs.failures and code in shown_by_raising_forward:
        answer = _confirm_on_failures(confirm_finding, cls, inputs.failures, finding)
        if answer[0] == "confirmed" or inputs.chosen is None:
            return answer
    if inputs.chosen is None:
        return ["unverified", inputs.reason or "could not build inputs"]
    make_inputs = _make_inputs_on(inputs.chosen, device)
    return _run_confirmer(confirm_finding, cls, make_inputs, finding)


def _confirm_on_failures(confirm_finding: Callable, cls: type, failures: list, finding: dict) -> list:
    """The first confirmation among the candidates on which forward raised, else what the most
    trusted one gave. Any of them may show it: the rule's own exception (PyTorch's message about
    save_for_backward, the binding TypeError) is the evidence, whatever the shapes; an unrelated
    exception (a shape the guess got wrong) shows nothing and stays unverified. On the CPU
    whatever the device: these exceptions do not depend on where the tensors live."""
    answers = []
    for failed in failures:
        confirmation, evidence = _run_confirmer(confirm_finding, cls, failed.make_inputs, finding)
        answers.append([confirmation, f"{evidence} (with {failed.source} inputs {failed.detail}, on which "
                                      f"forward raises)"])
        if confirmation == "confirmed":
            return answers[-1]
    return answers[0]


def _make_inputs_on(chosen: Any, device: str) -> Callable[[], tuple]:
    from autograd_lint.dynamic.inputs import make_inputs_factory

    return chosen.make_inputs if device == "cpu" else make_inputs_factory(chosen.recipe, device)


def _run_confirmer(confirm_finding: Callable, cls: type, make_inputs: Callable[[], tuple], finding: dict) -> list:
    try:
        confirmation, evidence = confirm_finding(cls, make_inputs, finding)
    except SystemExit as exit_:
        return ["unverified", f"the class's code {exit_call(exit_)} during the runtime check, which ends the process"]
    except BaseException as error:  # noqa: B036 - "never raises" is a promise we do not bet on
        return ["unverified", f"the runtime check raised {type(error).__name__}: {_first_line(error)}"]
    if confirmation not in ("confirmed", "not-reproduced", "unverified"):
        return ["unverified", f"the runtime check gave {confirmation!r}"]
    return [confirmation, str(evidence)]


class _ResultWriter:
    def __init__(self, path: str, result: dict) -> None:
        self.path, self.result = path, result

    def write(self) -> None:
        temporary = self.path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(self.result, handle, default=repr)
        os.replace(temporary, self.path)  # the runner never reads a half-written file


def _blocked(error: BaseException, request: dict) -> str:
    """What the sandbox stopped, when ``error`` comes from it ("" otherwise, or with it off)."""
    if request.get("sandbox", "off") == "off":
        return ""
    from autograd_lint.dynamic.sandbox import blocked

    return blocked(error)


def exit_call(exit_: SystemExit) -> str:
    """What the user's code did, said plainly: "called sys.exit(3)", "called exit() or sys.exit()"
    (``SystemExit: None`` told nobody that forward ends the process)."""
    return "called exit() or sys.exit()" if exit_.code is None else f"called sys.exit({exit_.code!r})"


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:300] if lines else ""


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # do not wait for threads or atexit handlers the user's module started
