"""Which inputs of a Function do the file's own callers fill with a trainable ``nn.Parameter``?

Returning ``None`` for an input is right for a constant (rotary cos/sin, masks, a frozen LoRA
base weight) and a silent bug for a parameter that trains. Names cannot tell them apart (a frozen
``weight`` is the most common LoRA idiom), so the evidence is the call site, in the same file:

    self.bias = nn.Parameter(torch.zeros(n))      # registered, trainable
    ...
    return QATLinear.apply(x, self.weight, self.bias)   # or `qat_linear = QATLinear.apply`

A parameter made with ``requires_grad=False``, and any file that sets or tests ``requires_grad``
(``requires_grad_(False)``, ``p.requires_grad = False``, ``if self.bias.requires_grad:``), give no
evidence: something there decides which parameters train.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ParameterArgument:
    attribute: str  # ``bias`` of ``self.bias``
    line: int  # where ``self.bias = nn.Parameter(...)`` is


_FREEZES = re.compile(r"requires_grad_\(\s*(False|0)\s*\)|\.requires_grad\s*=\s*(False|0)\b")


def trainable_parameter_argument(tree: Optional[ast.Module], text: str, class_name: str,
                                 position: int) -> Optional[ParameterArgument]:
    """A call ``<class_name>.apply(...)`` in this file that passes ``self.<attr>`` at
    ``position``, where ``self.<attr>`` is assigned an ``nn.Parameter`` that nothing in the file
    freezes; None when there is no such evidence."""
    if tree is None or _FREEZES.search(text):
        return None
    parameters = _trainable_parameters(tree)
    if not parameters:
        return None
    aliases = _apply_aliases(tree, class_name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not _calls_apply(node.func, class_name, aliases):
            continue
        args = node.args
        if any(isinstance(a, ast.Starred) for a in args[:position + 1]) or position >= len(args):
            continue
        argument = args[position]
        if (isinstance(argument, ast.Attribute) and isinstance(argument.value, ast.Name)
                and argument.value.id == "self" and argument.attr in parameters):
            attribute = argument.attr
            if re.search(rf"\b{re.escape(attribute)}\.requires_grad\b", text):
                continue  # tested: trainable ones may go another way
            return ParameterArgument(attribute, parameters[attribute])
    return None


def _trainable_parameters(tree: ast.Module) -> dict[str, int]:
    """``self.<attr> = nn.Parameter(...)`` (without ``requires_grad=False``) -> its line."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not (isinstance(value, ast.Call) and _last_name(value.func) == "Parameter"):
            continue
        if any(k.arg == "requires_grad" and not (isinstance(k.value, ast.Constant) and k.value.value is True)
               for k in value.keywords) or len(value.args) > 1:
            continue  # frozen, or a requires_grad we cannot read
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.setdefault(target.attr, node.lineno)
    return found


def _apply_aliases(tree: ast.Module, class_name: str) -> set[str]:
    """Names bound to ``<class_name>.apply`` (``qat_linear = QATLinear.apply``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_apply(node.value, class_name):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _calls_apply(func: ast.expr, class_name: str, aliases: set[str]) -> bool:
    return _is_apply(func, class_name) or (isinstance(func, ast.Name) and func.id in aliases)


def _is_apply(node: ast.expr, class_name: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "apply" and _last_name(node.value) == class_name


def _last_name(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
