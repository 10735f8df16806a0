"""Inputs taken from the user's own ``Cls.apply(...)`` calls (in the linted files and tests).

The surrounding code is never run: each argument is evaluated from its syntax tree by a small
evaluator that knows literals, arithmetic, torch's tensor factories (``torch.randn(3, 4)``), a
few harmless tensor methods (``.double()``, ``.t()``, ``.requires_grad_()``), module-level
constants, and local names assigned earlier in the same function from such expressions.
Anything else (a function parameter, a call into user code) makes the call site "not simple".
"""

from __future__ import annotations

import ast
import os
from typing import Any, Callable, Iterator, Optional

import torch

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


def candidates(cls: type, module: Any, files: list[str]) -> Iterator["Candidate"]:
    from autograd_lint.dynamic.inputs import Candidate

    seen: set[str] = set()
    for path in files:
        for call, scope in _apply_calls(path, cls.__name__):
            key = ast.dump(call)
            if key in seen:
                continue
            seen.add(key)
            evaluator = _Evaluator(vars(module), scope, call.lineno)
            try:
                evaluator.arguments(call)  # evaluate once now: reject what is not simple early
            except NotSimple:
                continue
            except Exception:  # the expression itself fails (a bad shape): not usable
                continue
            yield Candidate("call-site", f"{_short(path)}:{call.lineno}", _recipe(evaluator, call))
            if len(seen) >= MAX_CALL_SITES:
                return


def _recipe(evaluator: "_Evaluator", call: ast.Call) -> Callable[[], tuple]:
    return lambda: evaluator.arguments(call)


def _short(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _apply_calls(path: str, class_name: str) -> Iterator[tuple[ast.Call, ast.AST]]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return
    if f"{class_name}.apply" not in text:
        return
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    for scope in [tree, *[node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]]:
        for node in _walk_own(scope):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "apply"
                    and _last_name(node.func.value) == class_name):
                yield node, scope


def _walk_own(scope: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``scope`` without those of nested functions (they are scopes of their own)."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _last_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class _Evaluator:
    def __init__(self, namespace: dict, scope: ast.AST, line: int) -> None:
        self.namespace = namespace
        self.scope = scope
        self.line = line

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
            return _Evaluator(self.namespace, self.scope, line).value(value, depth + 1)
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
