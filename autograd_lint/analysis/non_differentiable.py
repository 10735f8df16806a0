"""Does any output of a Function need a gradient? If none does, PyTorch never calls backward.

``ctx.mark_non_differentiable(out)`` makes ``out`` a tensor that does not require grad, and a
non-tensor output never requires grad. When every value forward returns is one of those, on
every return path, no gradient can reach the Function: backward (and its return count, its grad
parameters, a stub body) does not matter. Anything we cannot read counts as differentiable, so
the rules that ask stay as they were.
"""

from __future__ import annotations

import re
from typing import Callable, Optional

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.syntax import dotted, is_ctx_attr, is_none
from autograd_lint.analysis.tensorness import Tensorness, TensorJudge

# A module path that names a compiled extension: `from . import _C`, `import my_cuda_ext`.
_EXTENSION = re.compile(r"(^|[._])(_C|_ext|ext|ext_module|_cuda|cuda_\w+|\w+_cuda|\w+_ext|_kernels?|\w+_cpp)($|\.)")


def extension_module(call: cst.Call, qualify: Callable[[str], str]) -> Optional[str]:
    """The module path of a call into a compiled extension (``my_cuda_ext.backward(...)``), whose
    result autograd cannot differentiate; None for anything else."""
    name = dotted(call.func)
    if name and "." in name:
        qualified = qualify(name)
        module_path = qualified.rsplit(".", 1)[0]
        if not qualified.startswith("torch.") and _EXTENSION.search(module_path):
            return module_path
    return None


_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def all_outputs_non_differentiable(model: FunctionModel) -> bool:
    """Every value forward returns is marked non-differentiable or is not a tensor."""
    forward = model.forward
    if forward is None or not forward.returns:
        return False
    if model.style == "new":
        return _new_style_all_marked(model, forward)
    marked = _marked_names(forward, model.ctx_names(forward))
    judge = model.judge(forward)
    for ret in forward.returns:
        value = ret.value
        if isinstance(value, cst.Tuple):
            if not all(_element_needs_no_grad(e, marked, judge) for e in value.elements):
                return False
        elif not _value_needs_no_grad(value, marked, judge):
            return False
    return True


def _element_needs_no_grad(element: cst.BaseElement, marked: set[str], judge: TensorJudge) -> bool:
    """One element of a returned tuple: a marked name, or anything certainly not a tensor (a
    list inside the tuple is one non-tensor output)."""
    if isinstance(element, cst.StarredElement):
        return False
    value = element.value
    if isinstance(value, cst.Name) and value.value in marked:
        return True
    return is_none(value) or judge(value) is Tensorness.NOT_TENSOR


def _value_needs_no_grad(value: Optional[cst.BaseExpression], marked: set[str], judge: TensorJudge) -> bool:
    """A whole returned value that is not a tuple literal. A name or call judged "not a tensor"
    may still be a tuple of tensors (``tuple(outs)``, ``result``), which PyTorch unpacks into
    outputs, so only literals, marked names and scalar-valued calls count."""
    if value is None or is_none(value) or isinstance(value, _LITERALS):
        return True
    if isinstance(value, cst.Name):
        return value.value in marked
    if isinstance(value, cst.Call) and dotted(value.func) in ("tuple", "divmod"):
        return False
    return isinstance(value, cst.Call) and judge(value) is Tensorness.NOT_TENSOR


def marked_output_names(model: FunctionModel) -> Optional[set[str]]:
    """The names forward passes to ``ctx.mark_non_differentiable(...)``; None when the marks
    cannot be matched to forward's names (a starred or computed argument, or marks made in
    setup_context on ``output``)."""
    names: set[str] = set()
    for method in model.forward_methods:
        for call in _mark_calls(method, model.ctx_names(method)):
            if method.name == "setup_context":
                return None
            for arg in call.args:
                if arg.star or not isinstance(arg.value, cst.Name):
                    return None
                names.add(arg.value.value)
    return names


def _marked_names(method: Method, ctx_names: frozenset[str]) -> set[str]:
    """Names passed to ``ctx.mark_non_differentiable(...)`` in ``method``."""
    names: set[str] = set()
    for call in _mark_calls(method, ctx_names):
        names |= {a.value.value for a in call.args if not a.star and isinstance(a.value, cst.Name)}
    return names


def _mark_calls(method: Method, ctx_names: frozenset[str]) -> list[cst.Call]:
    return [
        node for node in method.nodes_of(cst.Call)
        if is_ctx_attr(node.func, ctx_names, "mark_non_differentiable")
    ]


def _new_style_all_marked(model: FunctionModel, forward: Method) -> bool:
    """New style marks in ``setup_context(ctx, inputs, output)``: ``output`` itself (or
    ``*output``) covers every output; otherwise each position forward returns must be marked,
    through ``a, b = output`` or ``output[1]``."""
    setup = model.setup_context
    if setup is None or len(setup.params) < 3:
        return False
    output_name = setup.params[2].name
    whole_output = {output_name} | {  # `index = output`
        node.targets[0].target.value for node in setup.nodes_of(cst.Assign)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
        and isinstance(node.value, cst.Name) and node.value.value == output_name
    }
    calls = _mark_calls(setup, model.ctx_names(setup))
    marked_args = [a.value for call in calls for a in call.args]
    if any(isinstance(v, cst.Name) and v.value in whole_output for v in marked_args):
        return True  # mark_non_differentiable(output) or (*output)
    count = model.output_count
    if count is None:  # `values, indices = output` runs only if output has exactly two values
        count = _unpacked_length(setup, output_name)
    if count is None:
        return False
    positions = _output_positions(setup, output_name)
    marked_positions = set()
    for value in marked_args:
        if isinstance(value, cst.Name) and value.value in positions:
            marked_positions.add(positions[value.value])
        elif isinstance(value, cst.Subscript):
            index = _constant_subscript(value, output_name)
            if index is not None:
                marked_positions.add(index % count if index < 0 else index)
    return marked_positions >= set(range(count))


def _output_positions(setup: Method, output_name: str) -> dict[str, int]:
    """Local names bound to one output: ``values, indices = output`` or ``idx = output[1]``.
    A name bound more than once is left out (we cannot tell which binding is marked)."""
    positions: dict[str, int] = {}
    rebound: set[str] = set()

    def bind(name: str, position: int) -> None:
        if name in positions:
            rebound.add(name)
        positions[name] = position

    for node in setup.nodes_of(cst.Assign):
        if len(node.targets) != 1:
            continue
        target, value = node.targets[0].target, node.value
        if isinstance(value, cst.Name) and value.value == output_name and isinstance(target, (cst.Tuple, cst.List)):
            for i, element in enumerate(target.elements):
                if isinstance(element.value, cst.Name) and not isinstance(element, cst.StarredElement):
                    bind(element.value.value, i)
        elif isinstance(target, cst.Name) and isinstance(value, cst.Subscript):
            index = _constant_subscript(value, output_name)
            if index is not None and index >= 0:
                bind(target.value, index)
    return {name: p for name, p in positions.items() if name not in rebound}


def _unpacked_length(setup: Method, output_name: str) -> Optional[int]:
    for node in setup.nodes_of(cst.Assign):
        target = node.targets[0].target if len(node.targets) == 1 else None
        if (isinstance(node.value, cst.Name) and node.value.value == output_name
                and isinstance(target, (cst.Tuple, cst.List))
                and not any(isinstance(e, cst.StarredElement) for e in target.elements)):
            return len(target.elements)
    return None


def _constant_subscript(node: cst.Subscript, output_name: str) -> Optional[int]:
    """``output[1]`` -> 1 (``output[-1]`` -> -1); None for anything else."""
    if not (isinstance(node.value, cst.Name) and node.value.value == output_name and len(node.slice) == 1):
        return None
    index = node.slice[0].slice
    if not isinstance(index, cst.Index):
        return None
    value = index.value
    if isinstance(value, cst.Integer):
        return int(value.value)
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) and isinstance(
        value.expression, cst.Integer
    ):
        return -int(value.expression.value)
    return None
