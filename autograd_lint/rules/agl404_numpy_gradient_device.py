"""AGL404 numpy-gradient-device: backward returns a gradient made from a NumPy array
(``torch.from_numpy``, ``torch.as_tensor``/``torch.tensor`` of an array) that was never moved to
the gradient's device: on CUDA autograd rejects it."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from autograd_lint.analysis.class_model import Method
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import call_keyword, dotted, positional_args
from autograd_lint.analysis.tensorness import NON_TENSOR_METHODS
from autograd_lint.findings import Finding

CODE = "AGL404"
# Calls that give the tensor a device (any `.to(...)` but one that only names a dtype).
_MOVES = frozenset({"to", "cuda", "type_as", "new_tensor"})
_DTYPES = frozenset({"float", "float16", "float32", "float64", "double", "half", "bfloat16", "int", "int8",
                     "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128"})


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        if backward is None:
            continue
        qualify = model.qualify
        made = {id(call): call for call in backward.nodes_of(cst.Call) if _numpy_made(call, backward, qualify)}
        if not made:
            continue
        flow = _Flow(made, qualify)
        for node in backward.nodes_of(cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Return):
            if isinstance(node, cst.Return):
                flow.returned(node.value)
            else:
                flow.bind(node)
        grad = model.grad_params[0].name if model.grad_params else "grad_output"
        for call, index in flow.reported.items():
            node = made[call]
            what = dotted(node.func) or "the NumPy conversion"
            at = f" at index {index}" if index is not None else ""
            yield module.at(
                CODE, model, backward, node,
                f"{what}(...) makes a CPU tensor, and backward's gradient comes from it without a move to the "
                f"gradient's device: with CUDA inputs backward fails (autograd rejects the CPU gradient: "
                f"\"returned an invalid gradient{at} - expected device cuda:0 but got cpu\"; arithmetic with a "
                f"CUDA tensor raises \"Expected all tensors to be on the same device\"); add .to({grad}.device)",
            )


def _numpy_made(call: cst.Call, backward: Method, qualify) -> bool:
    """``torch.from_numpy(a)``, or ``torch.as_tensor(a)``/``torch.tensor(a, dtype=...)`` of a
    NumPy value, without ``device=``. ``torch.tensor(a)`` with neither dtype nor device is
    AGL402's finding already."""
    name = dotted(call.func)
    qualified = qualify(name) if name else ""
    if qualified == "torch.from_numpy":
        return True
    if qualified not in ("torch.as_tensor", "torch.tensor") or call_keyword(call, "device") is not None:
        return False
    if any(a.star == "**" for a in call.args):
        return False
    if qualified == "torch.tensor" and call_keyword(call, "dtype") is None:
        return False  # AGL402 flags it
    args = positional_args(call)
    return bool(args) and (len(args) < 3) and _is_numpy(args[0].value, backward, qualify)


def _is_numpy(node: cst.BaseExpression, backward: Method, qualify, depth: int = 0) -> bool:
    """``x.numpy()``, ``np.<f>(...)``, or a name backward binds only to such values."""
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "numpy" and not node.args:
            return True
        name = dotted(node.func)
        return bool(name) and qualify(name).startswith("numpy.")
    if isinstance(node, cst.BinaryOperation):  # `g.cpu().numpy() * 2`
        return any(_is_numpy(side, backward, qualify, depth) for side in (node.left, node.right))
    if isinstance(node, cst.UnaryOperation):
        return _is_numpy(node.expression, backward, qualify, depth)
    if isinstance(node, cst.Name) and depth < 3:
        values = [a.value for a in backward.nodes_of(cst.Assign)
                  if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)
                  and a.targets[0].target.value == node.value]
        return bool(values) and all(_is_numpy(v, backward, qualify, depth + 1) for v in values)
    return False


class _Flow:
    """Follows backward's statements in source order: which names hold a NumPy-made tensor not
    yet moved, and which of those calls reach a ``return``. A later ``g = g.to(device)`` (or any
    rebinding to something else) ends it, so a move on some branch only counts as a move:
    silence rather than a guess."""

    def __init__(self, made: dict[int, cst.Call], qualify) -> None:
        self.made = made
        self.qualify = qualify
        self.names: dict[str, set[int]] = {}  # name -> the NumPy-made calls it holds
        self.reported: dict[int, Optional[int]] = {}  # call -> gradient index (None: not known)

    def bind(self, node) -> None:
        if isinstance(node, cst.AugAssign):
            if isinstance(node.target, cst.Name):
                self.names[node.target.value] = self.names.get(node.target.value, set()) | self.carried(node.value)
            return
        if isinstance(node, cst.AnnAssign):
            targets, value = [node.target], node.value
        else:
            targets, value = [t.target for t in node.targets], node.value
        if value is None:
            return
        for target in targets:
            if isinstance(target, cst.Name):
                self.names[target.value] = self.carried(value)
            elif isinstance(target, (cst.Tuple, cst.List)):
                values = value.elements if isinstance(value, (cst.Tuple, cst.List)) and len(
                    value.elements) == len(target.elements) else None
                for i, element in enumerate(target.elements):
                    if isinstance(element.value, cst.Name):
                        carried = self.carried(values[i].value) if values is not None else set()
                        self.names[element.value.value] = carried

    def returned(self, value: Optional[cst.BaseExpression]) -> None:
        if value is None:
            return
        if isinstance(value, (cst.Tuple, cst.List)):
            for index, element in enumerate(value.elements):
                for call in self.carried(element.value):
                    self.reported.setdefault(call, None if isinstance(element, cst.StarredElement) else index)
            return
        for call in self.carried(value):
            self.reported.setdefault(call, 0)

    def carried(self, node: cst.BaseExpression) -> set[int]:
        """The NumPy-made calls whose CPU tensor ``node`` evaluates to (or computes with)."""
        if isinstance(node, cst.Name):
            return set(self.names.get(node.value, ()))
        if isinstance(node, cst.Call):
            if id(node) in self.made:
                return {id(node)}
            func = node.func
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method in NON_TENSOR_METHODS or self._moves(node, method):
                    return set()
                name = dotted(func)
                if name is None or not self.qualify(name).startswith("torch."):
                    return self.carried(func.value)  # `t.float()`, `t.reshape(...)`, `t.mul(g)`
            name = dotted(func)
            if name is not None and self.qualify(name).startswith("torch."):
                found: set[int] = set()  # `torch.mul(t, g)`, `torch.stack([t, u])`
                for arg in node.args:
                    found |= self.carried(arg.value)
                return found
            return set()  # a function we cannot see: what it returns is unknown
        if isinstance(node, cst.BinaryOperation):
            return self.carried(node.left) | self.carried(node.right)
        if isinstance(node, cst.UnaryOperation):
            return self.carried(node.expression)
        if isinstance(node, cst.Subscript):
            return self.carried(node.value)
        if isinstance(node, cst.IfExp):  # `g.cuda() if g.is_cuda else g`: a move on one branch is one
            return self.carried(node.body) & self.carried(node.orelse)
        if isinstance(node, (cst.Tuple, cst.List)):
            found = set()
            for element in node.elements:
                found |= self.carried(element.value)
            return found
        return set()

    def _moves(self, call: cst.Call, method: str) -> bool:
        if method not in _MOVES:
            return False
        if method != "to" or call_keyword(call, "device") is not None:
            return True
        args = positional_args(call)
        if len(args) == 1 and isinstance(args[0].value, cst.Attribute):
            name = dotted(args[0].value)
            if name is not None and self.qualify(name).startswith("torch.") and name.rsplit(".", 1)[-1] in _DTYPES:
                return False  # `.to(torch.float32)`: a dtype, the device stays the CPU
        return True
