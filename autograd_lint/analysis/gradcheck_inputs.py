"""AGL501's reading of a gradcheck call: are its inputs certainly built as float32 tensors that
require grad? Read by the module index (``GradcheckCall.float32_inputs``) and by AGL501's fixer,
which rewrites the very factories found here."""

from __future__ import annotations

import ast
from typing import Optional

from autograd_lint.analysis.ast_walk import dotted_name, keyword_value, walk


_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "tensor", "arange",
                        "linspace", "randint", "randn_like", "rand_like", "ones_like", "zeros_like",
                        "eye", "normal", "as_tensor"})
_DOUBLE = frozenset({"torch.double", "torch.float64", "double", "float64", "torch.complex128", "torch.cdouble"})


def builds_float32(inputs: ast.AST, scope: ast.AST, gradcheck: ast.Call) -> bool:
    """True when some input is certainly built as a float32 tensor that requires grad.

    Looks at the input expressions themselves and, for names, at their single assignment in the
    same function (or module). Anything it cannot see makes it answer False (precision first).
    """
    if isinstance(inputs, ast.Name):  # `inputs = (a, b)` then gradcheck(f, inputs)
        inputs = single_assignment(scope, inputs.id, gradcheck) or inputs
    elements = inputs.elts if isinstance(inputs, (ast.Tuple, ast.List)) else [inputs]
    for element in elements:
        if isinstance(element, ast.Name):
            element = single_assignment(scope, element.id, gradcheck)
            if element is None:
                continue
        if is_float32_factory(element):
            return True
    return False


def is_float32_factory(node: ast.AST) -> bool:
    """``torch.randn(3, requires_grad=True)`` (no double dtype), or any ``<tensor>.float()``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
        return False
    method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    if method == "float" and not node.args:
        return True
    if method == "requires_grad_":  # torch.randn(3).requires_grad_() / x.float().requires_grad_()
        inner = node.func.value
        return is_float32_factory(inner) or (is_factory(inner) and not _has_double_dtype(inner))
    return is_factory(node) and _requires_grad_set(node) and not _has_double_dtype(node)


def is_factory(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    head, _, last = (dotted_name(node.func) or "").rpartition(".")
    return head == "torch" and last in _FACTORIES


def _requires_grad_set(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        value = keyword_value(node, "requires_grad")
        return isinstance(value, ast.Constant) and value.value is True
    return False


def _has_double_dtype(call: ast.Call) -> bool:
    if any(keyword.arg is None for keyword in call.keywords):
        return True  # `**kwargs` may carry a dtype we cannot read (xitorch's `**dtype_device_kwargs`)
    dtype = keyword_value(call, "dtype")
    if dtype is None:
        return False
    name = dotted_name(dtype)
    # A dtype we cannot read (a variable) may well be double: count it as double.
    return name is None or name in _DOUBLE or not name.startswith("torch.") or name.split(".")[-1] in _DOUBLE


def single_assignment(scope: ast.AST, name: str, before: ast.AST) -> Optional[ast.AST]:
    """The one value ``name`` is bound to in ``scope`` (a function, or the module outside its
    functions and classes: ``if __name__ == "__main__":`` blocks included)."""
    values = []
    for node in _scope_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    values.append(node.value)
                elif isinstance(target, (ast.Tuple, ast.List)):
                    values.extend(_unpacked_value(target, node.value, name))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
            targets = [node.target] if not isinstance(node, ast.With) else [i.optional_vars for i in node.items]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets if t is not None):
                return None
    return values[0] if len(values) == 1 else None


def _unpacked_value(target: ast.AST, value: ast.AST, name: str) -> list[ast.AST]:
    """What ``name`` gets from ``a, b = value``: the matching element of a tuple, or the element
    expression of a comprehension (``q, k, v = [torch.randn(...) for _ in range(3)]``)."""
    names = [t.id if isinstance(t, ast.Name) else None for t in target.elts]
    if name not in names:
        return []
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(names):
        return [value.elts[names.index(name)]]
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        return [value.elt]
    return []


def _scope_nodes(scope: ast.AST):
    if not isinstance(scope, ast.Module):
        yield from walk(scope)
        return
    stack = list(scope.body)
    while stack:
        statement = stack.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield statement
        for name in ("body", "orelse", "finalbody"):
            stack.extend(getattr(statement, name, None) or [])
        for handler in getattr(statement, "handlers", None) or []:
            stack.extend(handler.body)
