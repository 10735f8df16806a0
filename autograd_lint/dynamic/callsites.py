"""Inputs taken from the user's own ``Cls.apply(...)`` calls (in the linted files and tests).

The surrounding code is never run: each argument is evaluated from its syntax tree by a small
evaluator that knows literals, arithmetic, torch's tensor factories (``torch.randn(3, 4)``), a
few harmless tensor methods (``.double()``, ``.t()``, ``.requires_grad_()``), module-level
constants, and local names assigned earlier in the same function from such expressions.
Anything else (a function parameter, a call into user code) makes the call site "not simple".

One level up: when ``apply`` is called in a module-level function with that function's
parameters (``def sparsemax(X, dim=-1): return SparsemaxFunction.apply(X, dim)``, the usual
public wrapper), the calls of that function (``sparsemax(torch.randn(4, 6), 1)`` in a test) are
call sites too: their arguments, and the wrapper's defaults, are bound to its parameters, and the
arguments of ``apply`` are evaluated with those bindings.
"""

from __future__ import annotations

import ast
import os
from typing import Any, Callable, Iterator, Optional

import torch

from autograd_lint.dynamic.candidate import Candidate

MAX_CALL_SITES = 5
MAX_DEPTH = 6  # local names resolved through at most this many assignments

TORCH_FACTORIES = frozenset({
    "randn", "rand", "randint", "randperm", "ones", "zeros", "full", "eye", "arange", "linspace",
    "logspace", "tensor", "as_tensor", "randn_like", "rand_like", "ones_like", "zeros_like", "full_like",
    "stack", "cat",
})
TENSOR_METHODS = frozenset({
    "double", "float", "long", "int", "bool", "requires_grad_", "t", "transpose", "reshape", "view",
    "unsqueeze", "squeeze", "permute", "contiguous", "clone", "detach", "to", "abs", "exp", "sigmoid",
    "tanh", "softmax", "add", "sub", "mul", "div", "sum", "mean", "expand", "repeat", "flatten", "clamp",
    "neg", "pow", "sqrt", "sin", "cos", "relu", "cpu", "normal_", "uniform_", "fill_", "zero_", "type",
})
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "shape"})
PLAIN_TYPES = (int, float, complex, bool, str, type(None), torch.dtype, torch.device)
_BINARY = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a ** b, ast.MatMult: lambda a, b: a @ b,
}
_UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a, ast.Not: lambda a: not a}


class NotSimple(Exception):
    """The expression needs more than the evaluator may do."""


def candidates(cls: type, module: Any, files: list[str], project_root: str = "") -> Iterator[Candidate]:
    """``project_root``: where the call sites' paths are shown from (the child runs elsewhere)."""
    namespace = vars(module)
    seen: set[str] = set()
    wrappers: dict[str, tuple[ast.Call, ast.FunctionDef]] = {}  # apply calls on a wrapper's parameters
    yielded = 0
    for path in files:
        for call, scope in apply_calls(path, cls.__name__):
            key = ast.dump(call)
            if key in seen:
                continue
            seen.add(key)
            evaluator = _Evaluator(namespace, scope, call.lineno)
            try:
                evaluator.arguments(call)  # evaluate once now: reject what is not simple early
            except NotSimple:
                if _is_wrapper(scope):
                    wrappers.setdefault(scope.name, (call, scope))
                continue
            except Exception:  # the expression itself fails (a bad shape): not usable
                continue
            yield Candidate("call-site", f"{_short(path, project_root)}:{call.lineno}", _recipe(evaluator, call))
            yielded += 1
            if yielded >= MAX_CALL_SITES:
                return
    for name, (call, wrapper) in wrappers.items():
        for caller, caller_scope, path in calls_of(name, files):
            recipe = _wrapper_recipe(namespace, call, wrapper, caller, caller_scope)
            try:
                recipe()
            except NotSimple:
                continue
            except Exception:  # noqa: BLE001 - a bad shape, a wrong argument count
                continue
            yield Candidate("call-site", f"{_short(path, project_root)}:{caller.lineno} (through {name}())", recipe)
            yielded += 1
            if yielded >= MAX_CALL_SITES:
                return


def plain_values(cls: type, module: Any, files: list[str]) -> dict[int, Any]:
    """Position -> a plain value (a number, a string, a bool, a tuple of them) that the user's
    ``Cls.apply(...)`` calls pass there, each argument evaluated on its own: a call site that is
    not simple as a whole still says that its ``0.9`` is a number. An argument that is a parameter
    of the enclosing function counts with that parameter's default (``def grid_pull(input, grid,
    interpolation='linear')`` passing ``interpolation`` on). A position where some call passes a
    tensor is left out: a parameter stays a plain value only where every readable call agrees."""
    namespace = vars(module)
    found: dict[int, Any] = {}
    other: set[int] = set()
    for path in files:
        for call, scope in apply_calls(path, cls.__name__):
            if any(isinstance(arg, ast.Starred) for arg in call.args):
                continue
            evaluator = _Evaluator(namespace, scope, call.lineno, _defaults_of(scope, namespace))
            for position, argument in enumerate(call.args):
                try:
                    value = evaluator.value(argument, 0)
                except Exception:  # noqa: BLE001 - not simple, or the expression fails: says nothing
                    continue
                if _plain(value):
                    found.setdefault(position, value)
                else:
                    other.add(position)
    return {position: value for position, value in found.items() if position not in other}


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(item) for item in value)
    return value is not None and isinstance(value, (int, float, str, bool))


def _defaults_of(scope: ast.AST, namespace: dict) -> dict[str, Any]:
    """A function's parameters that have a plain default, bound to it (a later assignment in the
    function still wins: ``_local_assignment`` is asked first)."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    spec = scope.args
    positional = [*spec.posonlyargs, *spec.args]
    pairs = list(zip(positional[len(positional) - len(spec.defaults):], spec.defaults))
    pairs += [(parameter, default) for parameter, default in zip(spec.kwonlyargs, spec.kw_defaults) if default is not None]
    defaults = {}
    for parameter, default in pairs:
        try:
            value = _Evaluator(namespace, _NO_SCOPE, 0).value(default, 0)
        except Exception:  # noqa: BLE001 - a default the evaluator cannot read says nothing
            continue
        if _plain(value):
            defaults[parameter.arg] = value
    return defaults


def _recipe(evaluator: "_Evaluator", call: ast.Call) -> Callable[[], tuple]:
    return lambda: evaluator.arguments(call)


def _is_wrapper(scope: ast.AST) -> bool:
    """A module-level function (see ``_apply_calls``), not a method: ``self.x`` cannot be bound."""
    return isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and getattr(scope, "module_level", False)


def _wrapper_recipe(namespace: dict, call: ast.Call, wrapper: ast.FunctionDef, caller: ast.Call,
                    caller_scope: ast.AST) -> Callable[[], tuple]:
    """Fresh arguments for ``apply``: the caller's arguments bound to the wrapper's parameters."""

    def recipe() -> tuple:
        caller_evaluator = _Evaluator(namespace, caller_scope, caller.lineno)
        bindings = bind_arguments(wrapper, caller, caller_evaluator, _Evaluator(namespace, _NO_SCOPE, 0))
        return _Evaluator(namespace, wrapper, call.lineno, bindings).arguments(call)

    return recipe


def bind_arguments(function: ast.FunctionDef, call: ast.Call, caller: "_Evaluator",
                   defaults: "_Evaluator") -> dict[str, Any]:
    """Parameter name -> value, as Python binds ``call`` to ``function`` (NotSimple when it would
    not bind, or needs ``*args``/``**kwargs`` on either side)."""
    spec = function.args
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        raise NotSimple("star arguments")
    positional = [*spec.posonlyargs, *spec.args]
    if len(call.args) > len(positional):
        raise NotSimple("more positional arguments than parameters")
    bound = {parameter.arg: caller.value(arg, 0) for parameter, arg in zip(positional, call.args)}
    by_keyword = {parameter.arg for parameter in [*spec.args, *spec.kwonlyargs]}
    for keyword in call.keywords:
        if keyword.arg in bound or keyword.arg not in by_keyword:
            raise NotSimple(f"keyword {keyword.arg}")
        bound[keyword.arg] = caller.value(keyword.value, 0)
    with_defaults = list(zip(positional[len(positional) - len(spec.defaults):], spec.defaults))
    with_defaults += [(parameter, default) for parameter, default in zip(spec.kwonlyargs, spec.kw_defaults)
                      if default is not None]
    for parameter, default in with_defaults:
        if parameter.arg not in bound:
            bound[parameter.arg] = defaults.value(default, 0)
    return bound


def calls_of(name: str, files: list[str]) -> Iterator[tuple[ast.Call, ast.AST, str]]:
    """Calls ``name(...)`` or ``something.name(...)``, with their scope, in ``files``."""
    for path in files:
        tree = parsed(path, f"{name}(")
        if tree is None:
            continue
        for scope in _scopes(tree):
            for node in _walk_own(scope):
                if isinstance(node, ast.Call) and last_name(node.func) == name \
                        and not (isinstance(node.func, ast.Attribute) and node.func.attr == "apply"):
                    yield node, scope, path


def _short(path: str, root: str) -> str:
    try:
        relative = os.path.relpath(path, root or None)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative.startswith("..") else relative


def apply_calls(path: str, class_name: str) -> Iterator[tuple[ast.Call, ast.AST]]:
    tree = parsed(path, f"{class_name}.apply")
    if tree is None:
        return
    for scope in _scopes(tree):
        for node in _walk_own(scope):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "apply"
                    and last_name(node.func.value) == class_name):
                yield node, scope


_PARSED: dict[str, tuple[str, Optional[ast.Module]]] = {}  # one child checks one module: a few files


def parsed(path: str, needle: str) -> Optional[ast.Module]:
    """The file's tree when its text contains ``needle`` (read and parsed once per process);
    its module-level functions are marked ``module_level``, the methods of its module-level
    classes ``owner_class`` (the class's name)."""
    if path not in _PARSED:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            text = ""
        _PARSED[path] = (text, None)
    text, tree = _PARSED[path]
    if needle not in text:
        return None
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                node.module_level = True  # type: ignore[attr-defined]
            elif isinstance(node, ast.ClassDef):  # its methods (callers.py calls them on an instance)
                for member in node.body:
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        member.owner_class = node.name  # type: ignore[attr-defined]
        _PARSED[path] = (text, tree)
    return tree


def _scopes(tree: ast.Module) -> list[ast.AST]:
    return [tree, *[node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]]


def _walk_own(scope: ast.AST) -> list[ast.AST]:
    """Nodes of ``scope`` without those of nested functions (they are scopes of their own), in
    source order: the first call site in a file is the one tried first."""
    found, stack = [], list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda node: (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)))


def last_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class _Evaluator:
    def __init__(self, namespace: dict, scope: ast.AST, line: int, bindings: Optional[dict] = None) -> None:
        self.namespace = namespace
        self.scope = scope
        self.line = line
        self.bindings = bindings or {}  # the scope's parameters, bound by a call (a wrapper's)

    def arguments(self, call: ast.Call) -> tuple:
        if call.keywords or any(isinstance(arg, ast.Starred) for arg in call.args):
            raise NotSimple("apply takes positional arguments only")
        return tuple(self.value(arg, 0) for arg in call.args)

    def value(self, node: ast.AST, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise NotSimple("too deep")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self.value(item, depth) for item in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.value(node.operand, depth))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](self.value(node.left, depth), self.value(node.right, depth))
        if isinstance(node, ast.Name):
            return self.name(node.id, depth)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        raise NotSimple(type(node).__name__)

    def name(self, name: str, depth: int) -> Any:
        assigned = self._local_assignment(name)
        if assigned is not None:
            value, line = assigned
            # Evaluated as of its own line: `x = x.double()` reads the x assigned before it.
            return _Evaluator(self.namespace, self.scope, line, self.bindings).value(value, depth + 1)
        if name in self.bindings:
            return self.bindings[name]
        if name == "torch":
            return torch
        value = self.namespace.get(name, _MISSING)
        if value is torch or isinstance(value, PLAIN_TYPES):
            return value
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        raise NotSimple(f"name {name}")

    def attribute(self, node: ast.Attribute, depth: int) -> Any:
        base = self.value(node.value, depth)
        if isinstance(base, torch.Tensor) and node.attr in TENSOR_ATTRIBUTES:
            return getattr(base, node.attr)
        if base is torch or (type(base).__name__ == "module" and getattr(base, "__name__", "").startswith("torch")):
            value = getattr(base, node.attr, _MISSING)
            if isinstance(value, PLAIN_TYPES) or type(value).__name__ == "module":
                return value
        raise NotSimple(f"attribute {node.attr}")

    def call(self, node: ast.Call, depth: int) -> Any:
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords):
            raise NotSimple("star arguments")
        func = node.func
        if not isinstance(func, ast.Attribute):
            raise NotSimple("call of a plain name")
        args = [self.value(arg, depth) for arg in node.args]
        kwargs = {k.arg: self.value(k.value, depth) for k in node.keywords}
        base = self.value(func.value, depth)
        if isinstance(base, torch.Tensor) and func.attr in TENSOR_METHODS:
            return getattr(base, func.attr)(*args, **kwargs)
        if base is torch and func.attr in TORCH_FACTORIES:
            return getattr(torch, func.attr)(*args, **kwargs)
        raise NotSimple(f"call of {func.attr}")

    def _local_assignment(self, name: str) -> Optional[tuple[ast.AST, int]]:
        """The value of the last simple ``name = ...`` before the call, in the call's scope."""
        best: Optional[ast.AST] = None
        best_line = -1
        for node in _walk_own(self.scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if isinstance(target, ast.Name) and target.id == name and best_line < node.lineno < self.line:
                best, best_line = value, node.lineno
        return (best, best_line) if best is not None else None


_MISSING = object()
_NO_SCOPE = ast.Module(body=[], type_ignores=[])  # defaults are evaluated at module level
