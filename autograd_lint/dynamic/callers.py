"""Inputs captured from the package's own callers of ``apply``, when no guess of its arguments runs.

``apply``'s arguments are often what no guess can be: a plan that a setup function computes, a
compiled equation, the calling ``nn.Module`` itself, a filter bank. The code that calls ``apply``
builds them, and it is usually easier to call: a module-level function or an ``nn.Module`` method
whose parameters are the user-facing ones (tensors, options with defaults). Each such caller in
the class's package is called with synthesized arguments (an ``nn.Module`` built with its
defaults, its subclasses too), while ``apply`` is replaced by a recorder that keeps the arguments
of its first call and stops the caller there; those arguments are a candidate like any other.

A captured tensor that required grad keeps requiring it (an input, or a parameter of the module);
a buffer or a constant does not. Where none required grad (a self-test that builds its own
tensors and runs forward only), every float tensor requires grad, as a guess: else forward's output
needs no gradient and backward is never called. The tensors' shapes are the package's own, so a constant that
backward gives no gradient does not make a finding uncertain (``Candidate.shapes_known``).
Only the package's modules are searched, never its tests: a test function may train for minutes
before it reaches ``apply``.

The package's documented examples come first (``example_candidates``): the ``>>>`` lines in the
docstrings of the class, its ``forward``, the callers above and their modules are run, as doctest
would, with the same recorder. Their arguments are the authors' own: a solver's residual function,
a factorization beside its matrix, the mask the function expects.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import importlib
import io
import inspect
import itertools
import math
import os
import re
import sys
import textwrap
import time
import weakref
from dataclasses import replace
from typing import Any, Callable, Iterator, Optional

import torch

from autograd_lint.dynamic import objects, structure, synthesis
from autograd_lint.dynamic.callsites import apply_calls, calls_of, parsed
from autograd_lint.dynamic.candidate import Candidate, CapturedTensor

MAX_CALLERS = 6
MAX_TRIES_PER_CALLER = 16  # the synthesized plans for the caller's own parameters, both value ranges
MAX_CAPTURES_PER_CALLER = 6  # distinct shapes: a square matrix is the synthesis's sixth plan
MAX_LARGER_TRIES = 2  # both value ranges
MAX_STRUCTURED_TRIES = 4  # where the caller's names or docstring ask for a matrix structure


class _Captured(BaseException):
    """Stops the caller at ``apply`` (a BaseException: a caller's ``except Exception`` must not
    swallow it and go on with a made-up result)."""


class Caller:
    """A function that calls ``apply``, shaped as the synthesis reads a Function class:
    ``synthesis.code_slots`` reads ``forward``'s code and docstring."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.forward = function


def candidates(cls: type, module: Any, files: list[str], seed: int,
               make_inputs: Callable[[Callable[[], tuple]], Callable[[], tuple]],
               deadline: float = math.inf, plain_classes: bool = False) -> Iterator[Candidate]:
    """Candidates whose arguments a caller of ``cls.apply`` built. ``make_inputs`` turns a
    synthesized recipe into fresh float64 inputs that require grad (``inputs.make_inputs_factory``);
    no caller is called after ``deadline`` (``time.monotonic()``: the search's budget).
    ``plain_classes``: the methods of the package's plain classes instead (an operator, a solver,
    built from their constructors' defaults), which ``inputs`` tries after the error-led second
    tries: an object built from defaults holds guesses too (a group element that is no unit
    quaternion), where a retry that the errors led may have got the input right."""
    for label, function in itertools.islice(_callers(cls, module, files, plain_classes), MAX_CALLERS):
        captures = 0
        layouts: set[tuple] = set()
        for arguments, detail in _caller_arguments(function, make_inputs):
            if time.monotonic() > deadline:
                return
            torch.manual_seed(seed)
            captured = capture(cls, function, arguments)
            if captured is None or _layout(captured) in layouts:  # the same shapes again: no new try
                continue
            layouts.add(_layout(captured))
            yield _captured_candidate(captured, label, detail)
            captures += 1
            if captures >= MAX_CAPTURES_PER_CALLER:
                break


def _captured_candidate(captured: tuple, label: str, detail: str) -> Candidate:
    """The candidate of what ``apply`` got from the caller ``label``. A caller that builds its own
    tensors without grad (a self-test that runs forward only) would leave backward uncalled: its
    float tensors require grad, as a guess (as for a documented example that shows forward only)."""
    grad_positions = tuple(index for index, value in enumerate(captured)
                           if isinstance(value, CapturedTensor) and value.requires_grad)
    if not grad_positions:
        captured, grad_positions = _wanting_grad(captured)
        if grad_positions:  # ("no float tensor: " for a caller without parameters)
            detail = f"{detail.rstrip(': ')}, its float tensors made to require grad"
    return Candidate("synthesized", f"through {label}, {detail}", _recipe(captured), grad_positions,
                     shapes_known=True)


def _wanting_grad(captured: tuple) -> tuple[tuple, tuple[int, ...]]:
    """``captured`` with every float (or complex) tensor requiring grad, and their positions."""
    floats = tuple(index for index, value in enumerate(captured) if isinstance(value, CapturedTensor)
                   and (value.tensor.is_floating_point() or value.tensor.is_complex()))
    return tuple(replace(value, requires_grad=True) if index in floats else value
                 for index, value in enumerate(captured)), floats


def capture(cls: type, function: Callable[..., Any], arguments: tuple) -> Optional[tuple]:
    """``apply``'s positional arguments at the first call that ``function(*arguments)`` makes;
    None when it raises before, returns without calling it, or passes keywords that forward's
    signature cannot place."""
    caller_globals = getattr(inspect.unwrap(getattr(function, "__func__", function)), "__globals__", {})
    return _first_apply_call(cls, lambda: function(*arguments), caller_globals)


def _first_apply_call(cls: type, run: Callable[[], Any], caller_globals: dict) -> Optional[tuple]:
    """What ``run()`` passes to ``apply`` first (``capture``), with the recorder in place of
    ``apply`` and of the module-level names bound to it while ``run`` runs."""
    seen: list[tuple] = []

    def recorder(*args: Any, **kwargs: Any) -> Any:
        if any(_transformed(value) for value in (*args, *kwargs.values())):
            # Not a call to keep, and no result to go on with: the caller (the example) fails.
            raise RuntimeError("apply called under a torch.func transform")
        seen.append(_positional(cls, args, kwargs))
        raise _Captured

    original = cls.__dict__.get("apply")
    bound = cls.apply
    aliases = _aliases(caller_globals, cls, bound)
    cls.apply = staticmethod(recorder)  # type: ignore[method-assign]
    for namespace, name in aliases:
        namespace[name] = recorder
    try:
        with torch.enable_grad():
            run()
    except _Captured:
        pass
    except Exception:  # noqa: BLE001 - the caller refuses the guess: not a candidate
        return None
    finally:
        if original is None:
            del cls.apply
        else:
            cls.apply = original  # type: ignore[method-assign]
        for namespace, name in aliases:
            namespace[name] = bound
    if not seen or seen[0] is None:
        return None
    return tuple(_frozen(value) for value in seen[0])


def _transformed(value: Any) -> bool:
    """A tensor that a ``torch.func`` transform wraps (an example that calls ``apply`` under
    ``hessian``): outside the transform it has no values of its own to copy."""
    wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)
    return isinstance(value, torch.Tensor) and wrapped is not None and bool(wrapped(value))


def _positional(cls: type, args: tuple, kwargs: dict) -> Optional[tuple]:
    if not kwargs:
        return args
    parameters = synthesis.forward_parameters(cls) or []
    values = list(args)
    for parameter in parameters[len(args):]:
        if parameter.name in kwargs:
            values.append(kwargs.pop(parameter.name))
        elif parameter.default is not inspect.Parameter.empty:
            values.append(parameter.default)
        else:
            return None
    return tuple(values) if not kwargs else None


def _aliases(caller_globals: dict, cls: type, bound: Any) -> list[tuple[dict, str]]:
    """Module-level names bound to ``apply`` (``_scale = _Scale.apply``) in the caller's module
    and in the modules of the class's top package (a public function may reach the alias through
    a helper of another module, an example through the package's re-export)."""
    top = cls.__module__.partition(".")[0]
    namespaces = [caller_globals] + [vars(loaded) for name, loaded in list(sys.modules.items())
                                     if (name == top or name.startswith(top + ".")) and loaded is not None
                                     and vars(loaded) is not caller_globals]
    return [(namespace, name) for namespace in namespaces for name, value in list(namespace.items())
            if inspect.ismethod(value) and value == bound]


def _frozen(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        tensor = value.detach().clone()
        return CapturedTensor(tensor, bool(value.requires_grad), _structure(tensor))
    return value


def _structure(tensor: torch.Tensor) -> Optional[str]:
    """The structure a square float matrix's values have: symmetric (an SPD input, or one the
    caller symmetrized) or lower triangular. gradcheck's finite differences must stay on that
    set (``structure.project``): off it, a correct backward that returns the symmetrized gradient fails."""
    if not tensor.is_floating_point() or tensor.dim() < 2 or tensor.shape[-1] != tensor.shape[-2] \
            or tensor.shape[-1] < 2 or tensor.numel() == 0:
        return None
    if torch.equal(tensor, tensor.mT):
        return structure.SYMMETRIC
    if torch.equal(tensor, tensor.tril()) and bool((tensor.tril(-1) != 0).any()):
        return structure.LOWER_TRIANGULAR
    return None


def _layout(captured: tuple) -> tuple:
    return tuple(tuple(value.tensor.shape) if isinstance(value, CapturedTensor) else type(value).__name__
                 for value in captured)


def _recipe(captured: tuple) -> Callable[[], tuple]:
    return lambda: captured  # inputs.prepare copies each tensor


def _caller_arguments(function: Callable[..., Any], make_inputs: Callable[[Callable[[], tuple]], Callable[[], tuple]]
                      ) -> Iterator[tuple[tuple, str]]:
    """Synthesized arguments for the caller, as for a Function's forward, the first plans first."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return
    owner = Caller(function)
    slots = synthesis.code_slots(owner, parameters)
    if slots is None:
        return
    tries = itertools.chain(itertools.islice(structure.candidates(owner, parameters), MAX_STRUCTURED_TRIES),
                            itertools.islice(synthesis.candidates_for(slots), MAX_TRIES_PER_CALLER),
                            itertools.islice(synthesis.candidates_for(_larger(slots)), MAX_LARGER_TRIES))
    for candidate in tries:
        try:
            arguments = make_inputs(candidate.recipe)()
        except Exception:  # noqa: BLE001 - a spec that does not build
            continue
        yield arguments, candidate.detail


def _larger(slots: list[synthesis.Slot]) -> list[synthesis.Slot]:
    """The float tensors larger than the plans make them: a caller may downsample before it
    reaches ``apply`` (the second level of a wavelet transform), or ``apply`` may need sizes that
    divide by 8. A batch of one keeps gradcheck's cost (a pass per element) within the time limit."""
    return [replace(slot, shape=_LARGER[min(max(slot.rank or slot.min_rank or 2, 1), len(_LARGER))])
            if slot.kind == synthesis.FLOAT and slot.shape is None else slot for slot in slots]


_LARGER = {1: (16,), 2: (8, 16), 3: (1, 8, 16), 4: (1, 1, 8, 16), 5: (1, 1, 1, 8, 16), 6: (1, 1, 1, 1, 8, 16)}


# --- finding the callers --------------------------------------------------------------------------

def _callers(cls: type, module: Any, files: list[str],
             plain_classes: bool = False) -> Iterator[tuple[str, Callable[..., Any]]]:
    """(label, callable) for each function of the package that calls ``cls.apply``: module-level
    functions and static methods first, then the methods of ``nn.Module`` classes, on an instance
    built with its defaults and then on instances of its subclasses, then the callers of those
    module-level functions."""
    for caller_module, owner, name in _caller_sites(cls, module, files):
        yield from _runnable(caller_module, owner, name, with_subclasses=True, plain_classes=plain_classes)


def _caller_sites(cls: type, module: Any, files: list[str]) -> Iterator[tuple[Any, Optional[str], str]]:
    """(module, owner class name or None, function name) of each function of the package that
    calls ``cls.apply``, in ``_callers``' order; the modules are loaded ones."""
    functions, methods = [], []
    package_files = _package_files(module, files)
    # `Cls.apply(...)` and the calls of a module-level alias (`_noised_topk = _NoisedTopK.apply`).
    scopes = [(path, scope) for path in package_files for _, scope in apply_calls(path, cls.__name__)]
    scopes += [(path, scope) for alias in _apply_aliases(getattr(module, "__file__", "") or "", cls.__name__)
               for _, scope, path in calls_of(alias, package_files)]
    for path, scope in scopes:
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        owner = getattr(scope, "owner_class", None)
        if getattr(scope, "module_level", False):
            functions.append((path, None, scope.name))
        elif owner is not None:
            methods.append((path, owner, scope.name))
    # One level further out: the public functions and modules that call a private helper
    # (`apply_quad(a, f, fprime)` -> `_apply_spectral(a, f, g_builder, eig, ...)` -> `apply`).
    # The recorder sits on `apply` itself, so any caller that reaches it is captured.
    # So are the functions that build the class whose method calls it (`implicit_root(...)` builds
    # `_Root(...)` and calls its `solve`).
    outer = []
    builders = [owner for _, owner, _ in methods if owner is not None]
    for helper in dict.fromkeys([*(name for _, _, name in functions), *builders]):
        for _, scope, path in calls_of(helper, package_files):
            if getattr(scope, "module_level", False):
                outer.append((path, None, scope.name))
            elif getattr(scope, "owner_class", None) is not None:
                outer.append((path, scope.owner_class, scope.name))
    seen: set[tuple] = set()
    for path, owner, name in [*functions, *methods, *outer]:
        if (path, owner, name) in seen or name.startswith("__"):
            continue
        seen.add((path, owner, name))
        caller_module = _module_at(path, module)
        if caller_module is not None:
            yield caller_module, owner, name


# --- classes a function makes when it runs --------------------------------------------------------

# A class made by calling its function -> the arguments its first ``apply`` call got there: the
# first candidate after the declared ones (``inputs._candidates``).
MADE_WITH: "weakref.WeakKeyDictionary[type, Candidate]" = weakref.WeakKeyDictionary()


def made_by_calling(where: tuple[str, int, int, str], holder: tuple[Optional[str], str], module: Any,
                    files: list[str], make_inputs: Callable[[Callable[[], tuple]], Callable[[], tuple]],
                    seed: int, deadline: float) -> Optional[tuple[type, str, Optional[Candidate]]]:
    """A Function class that exists only once a function of the package runs (a factory, a public
    function that defines its Function per call, whose class reads that function's names): the
    function that holds it (``holder``: its class or None, its name), then the package's functions
    that call it, are called with synthesized arguments, and the class statement's run is noticed.
    ``where``: the class statement's file, first and last line, and name. Returns the class made,
    how, and a candidate of the arguments its first ``apply`` call got (None when the function
    returned before calling it: the class is then checked on guesses); None when no call made it."""
    runners = list(itertools.islice(_holder_runners(holder, module, files), MAX_CALLERS))
    made: Optional[tuple[type, str, Optional[Candidate]]] = None
    for label, function in runners:
        for arguments, detail in itertools.islice(_caller_arguments(function, make_inputs), MAX_TRIES_PER_CALLER):
            if time.monotonic() > deadline:
                return made
            torch.manual_seed(seed)
            cls, captured = _made_while(where, lambda: function(*arguments))
            if cls is None:
                continue
            arguments_text = detail.removeprefix("no float tensor: ")
            how = f"made by calling {label} with {arguments_text}" if arguments_text else f"made by calling {label}"
            if captured is None:
                made = made or (cls, how, None)
                continue
            return cls, how, _captured_candidate(captured, label, detail)
    return made


def _holder_runners(holder: tuple[Optional[str], str], module: Any,
                    files: list[str]) -> Iterator[tuple[str, Callable[..., Any]]]:
    """The holding function itself (a function of the module, a static method, or the method of
    an ``nn.Module`` built with its defaults), then the package's functions that call it."""
    owner, name = holder
    yield from _runnable(module, owner, name)
    seen = {(os.path.abspath(getattr(module, "__file__", "") or ""), owner, name)}
    for _, scope, path in calls_of(name, _package_files(module, files)):
        site = (path, getattr(scope, "owner_class", None), getattr(scope, "name", ""))
        if site in seen or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or site[2].startswith("__"):
            continue
        if not getattr(scope, "module_level", False) and site[1] is None:
            continue
        seen.add(site)
        caller_module = _module_at(path, module)
        if caller_module is not None:
            yield from _runnable(caller_module, site[1], site[2])


def _runnable(module: Any, owner: Optional[str], name: str, with_subclasses: bool = False,
              plain_classes: Optional[bool] = None) -> Iterator[tuple[str, Callable[..., Any]]]:
    """``name`` of ``module`` as something to call: a function of the module, a static or class
    method of its class ``owner``, or the method of an instance built from the constructor's
    defaults (``objects.built``: an ``nn.Module`` in float64, or a plain class of the package:
    an operator, a solver, a layer that is no module), and of its subclasses (``with_subclasses``).
    ``plain_classes``: True for only the plain classes' methods, False for all but them, None for
    all (a class that a function makes when it runs)."""
    if plain_classes and owner is None:  # a function of the module: not a plain class's method
        return
    if owner is None:
        function = getattr(module, name, None)
        if inspect.isfunction(function) and not inspect.iscoroutinefunction(function):
            yield f"{name}()", function
        return
    holder = getattr(module, owner, None)
    if not isinstance(holder, type):
        return
    declared = inspect.getattr_static(holder, name, None)
    plain = not issubclass(holder, torch.nn.Module) and not isinstance(declared, (staticmethod, classmethod))
    if plain_classes is not None and plain != plain_classes:
        return
    if isinstance(declared, (staticmethod, classmethod)):
        yield f"{owner}.{name}()", getattr(holder, name)
    elif not plain or (inspect.isfunction(declared) and synthesis.own_class(holder)):
        for klass in [holder, *(objects.subclasses(holder) if with_subclasses else ())]:
            instance = objects.built_exactly(klass)
            if instance is not None:
                yield f"{klass.__name__}().{name}()", getattr(instance, name)


def _made_while(where: tuple[str, int, int, str], run: Callable[[], Any]) -> tuple[Optional[type], Optional[tuple]]:
    """The Function class that ``run()`` makes from the class statement at ``where`` (noticed by
    torch's metaclass, whose ``__init__`` runs for every Function class statement), and what its
    first ``apply`` call passes (a recorder stands in for it and stops ``run`` there)."""
    path, first, last, name = where
    metaclass = type(torch.autograd.Function)
    original = metaclass.__init__
    made: list[type] = []
    seen: list[Optional[tuple]] = []

    def noticing(cls: type, class_name: str, bases: tuple, attributes: dict) -> None:
        original(cls, class_name, bases, attributes)
        if class_name == name and not made and _defined_at(attributes, path, first, last):
            made.append(cls)

            def recorder(*args: Any, **kwargs: Any) -> Any:
                seen.append(_positional(cls, args, kwargs))
                raise _Captured

            cls.apply = staticmethod(recorder)  # type: ignore[method-assign]

    metaclass.__init__ = noticing  # type: ignore[method-assign]
    try:
        with torch.enable_grad():
            run()
    except _Captured:
        pass
    except Exception:  # noqa: BLE001 - the guess refused after the class was made: still made
        pass
    finally:
        metaclass.__init__ = original  # type: ignore[method-assign]
        for cls in made:
            if "apply" in cls.__dict__:
                del cls.apply  # torch's own again
    if not made:
        return None, None
    captured = seen[0] if seen else None
    return made[0], (tuple(_frozen(value) for value in captured) if captured is not None else None)


def _defined_at(attributes: dict, path: str, first: int, last: int) -> bool:
    """Whether a method of the class body being made has its code within ``path``'s lines."""
    for value in attributes.values():
        code = getattr(getattr(value, "__func__", value), "__code__", None)
        if code is not None and first <= code.co_firstlineno <= last:
            return os.path.realpath(code.co_filename) == os.path.realpath(path)
    return False


# --- the package's documented examples ----------------------------------------------------------

MAX_EXAMPLE_DOCSTRINGS = 12
MAX_EXAMPLES_PER_DOCSTRING = 40  # lines of `>>>` code


def example_candidates(cls: type, module: Any, files: list[str], seed: int, deadline: float = math.inf,
                       large: Optional[list[Candidate]] = None) -> Iterator[Candidate]:
    """Candidates whose arguments a documented example of the package passes to ``cls.apply``.

    Where the example makes some tensors require grad, its arguments are the authors' own call
    (source ``call-site``): the others are constants there. Where it makes none require grad (it
    shows forward only), every float tensor requires grad, as a guess (``synthesized``, and
    ``Candidate.guessed``: backward's None for one takes its grad away).

    An example's data can be large (a sample of 500 points): gradcheck runs forward twice per
    element. A candidate with more than ``MAX_EXAMPLE_ELEMENTS`` elements to check goes to
    ``large`` instead, for the caller to try after the cheaper sources."""
    for candidate in _example_candidates(cls, module, files, seed, deadline):
        if large is not None and _elements_checked(candidate) > MAX_EXAMPLE_ELEMENTS:
            large.append(candidate)
        else:
            yield candidate


MAX_EXAMPLE_ELEMENTS = 64  # the synthesized inputs' size: a (3, 4) pair, or a (4, 4) matrix and more


def _elements_checked(candidate: Candidate) -> int:
    return sum(value.tensor.numel() for value in candidate.recipe()
               if isinstance(value, CapturedTensor) and value.requires_grad)


def _example_candidates(cls: type, module: Any, files: list[str], seed: int, deadline: float) -> Iterator[Candidate]:
    layouts: set[tuple] = set()
    for label, examples, namespace in itertools.islice(_documented_examples(cls, module, files), MAX_EXAMPLE_DOCSTRINGS):
        if time.monotonic() > deadline:
            return
        torch.manual_seed(seed)
        captured = _first_apply_call(cls, lambda: _run_examples(examples, namespace, deadline), namespace)
        if captured is None or _layout(captured) in layouts:
            continue
        layouts.add(_layout(captured))
        marked = tuple(index for index, value in enumerate(captured)
                       if isinstance(value, CapturedTensor) and value.requires_grad)
        if marked:
            yield Candidate("call-site", f"the docstring example of {label}", _recipe(captured), shapes_known=True)
            continue
        wanting, floats = _wanting_grad(captured)
        if floats:
            yield Candidate("synthesized", f"from the docstring example of {label}", _recipe(wanting),
                            guessed=floats, shapes_known=True)


def _documented_examples(cls: type, module: Any, files: list[str]) -> Iterator[tuple[str, list, dict]]:
    """(label, doctest examples, the namespace they run in: their module's globals) of each
    docstring that has examples (``>>>`` lines, else code blocks: ``code_blocks``): the class's
    and forward's, then each caller's (and its class's), then the modules', then the other
    functions' and classes' of those modules. The namespace is read when the examples run
    (``_run_examples`` copies it), after the recorder took the place of ``apply``'s aliases."""
    parser = doctest.DocTestParser()
    seen: set[str] = set()

    def found(label: str, owner: Any, namespace: dict) -> Iterator[tuple[str, list, dict]]:
        # The owner's own docstring: `inspect.getdoc` would fall back on a base's, and
        # `torch.autograd.Function`'s has examples of its own.
        text = getattr(owner, "__doc__", None)
        if not isinstance(text, str) or text in seen or not (">>>" in text or "::" in text or "```" in text):
            return
        seen.add(text)
        text = inspect.cleandoc(text)
        try:
            examples = parser.get_examples(text)
        except ValueError:  # a malformed example (a `>>>` line without its space)
            examples = []
        examples = examples or [doctest.Example(block, "") for block in code_blocks(text)]
        if examples:
            yield label, examples[:MAX_EXAMPLES_PER_DOCSTRING], namespace

    yield from found(cls.__name__, cls, vars(module))
    yield from found(f"{cls.__name__}.forward", cls.__dict__.get("forward"), vars(module))
    modules = [module]
    for caller_module, owner, name in _caller_sites(cls, module, files):
        namespace = vars(caller_module)
        if owner is None:
            yield from found(f"{name}()", getattr(caller_module, name, None), namespace)
        else:
            holder = getattr(caller_module, owner, None)
            if isinstance(holder, type):
                yield from found(owner, holder, namespace)
                yield from found(f"{owner}.{name}()", getattr(holder, name, None), namespace)
        if all(caller_module is not other for other in modules):
            modules.append(caller_module)
    for each in modules:
        yield from found(f"module {each.__name__}", each, vars(each))
    # Then the other functions and classes these modules define, in their order: a public function
    # may reach `apply` through an object it builds, which no name above shows.
    for each in modules:
        for name, value in list(vars(each).items()):
            if (inspect.isfunction(value) or isinstance(value, type)) and getattr(value, "__module__", None) == each.__name__:
                yield from found(f"{name}()" if inspect.isfunction(value) else name, value, vars(each))


# A literal block (`Example::` and the indented lines after it, `.. code-block:: python`) or a
# Markdown fence (```python ... ```): examples written without `>>>`.
_LITERAL_START = re.compile(r"::\s*(?:python)?\s*$")
_FENCE = re.compile(r"^[ \t]*```[ \t]*(?:python|py)?[ \t]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)


def code_blocks(text: str) -> list[str]:
    """The code of a docstring's fences, then of its literal blocks, that parses as Python (prose
    after a `::` does not)."""
    blocks = [match.group(1) for match in _FENCE.finditer(text)]
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not _LITERAL_START.search(line):
            continue
        indent = len(line) - len(line.lstrip())
        body: list[str] = []
        for following in lines[number + 1:]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following)
        if any(part.strip() for part in body):
            blocks.append(textwrap.dedent("\n".join(body)).strip("\n") + "\n")
    code = []
    for block in blocks:
        try:
            ast.parse(block)
        except (SyntaxError, ValueError):  # ValueError: a NUL character in the text
            continue
        code.append(block)
    return code


def _run_examples(examples: list, namespace: dict, deadline: float) -> None:
    """Run the examples in order in a copy of ``namespace``, as doctest does (a failing one does not
    stop the next: it may not need it), without their printed output; until ``apply`` is reached."""
    scope = dict(namespace)
    with contextlib.redirect_stdout(io.StringIO()):
        for example in examples:
            if time.monotonic() > deadline:
                return
            try:
                exec(compile(example.source, "<docstring example>", "exec"), scope)  # noqa: S102
            except (Exception, SystemExit):  # noqa: BLE001 - the next example may not need this one
                continue


def _apply_aliases(path: str, class_name: str) -> list[str]:
    """Module-level names bound to ``Cls.apply`` in the class's own file."""
    tree = parsed(path, f"{class_name}.apply") if path else None
    return [target.id for node in (tree.body if tree is not None else ())
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr == "apply"
            and isinstance(node.value.value, ast.Name) and node.value.value.id == class_name
            for target in node.targets if isinstance(target, ast.Name)]


def _package_files(module: Any, files: list[str]) -> list[str]:
    """The module's own file first, then the other files of its top package among ``files``."""
    own = os.path.abspath(getattr(module, "__file__", "") or "")
    top = _top_package_directory(own)
    others = [os.path.abspath(path) for path in files]
    inside = [path for path in others if path != own and top and path.startswith(top + os.sep)]
    return ([own] if own else []) + sorted(inside)


def _top_package_directory(path: str) -> str:
    directory = os.path.dirname(path)
    top = ""
    while directory and os.path.isfile(os.path.join(directory, "__init__.py")):
        top = directory
        directory = os.path.dirname(directory)
    return top


def _module_at(path: str, module: Any) -> Optional[Any]:
    """The module loaded from ``path``: the checked one, one already imported, or (in the same
    package) imported now by its dotted name."""
    if os.path.abspath(getattr(module, "__file__", "") or "") == path:
        return module
    for loaded in list(sys.modules.values()):
        if os.path.abspath(getattr(loaded, "__file__", "") or "") == path:
            return loaded
    top = _top_package_directory(path)
    if not top:
        return None
    relative = os.path.relpath(os.path.splitext(path)[0], os.path.dirname(top)).split(os.sep)
    if relative[-1] == "__init__":
        relative = relative[:-1]
    if relative[0] not in sys.modules:  # another package than the checked one's
        return None
    try:
        return importlib.import_module(".".join(relative))
    except Exception:  # noqa: BLE001 - a module of the package that does not import here
        return None
