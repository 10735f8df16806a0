"""Does any output of a Function need a gradient? If none does, PyTorch never calls backward.

``ctx.mark_non_differentiable(out)`` makes ``out`` a tensor that does not require grad; a
non-tensor output (a number, a list, a dict, an object of a plain class) never requires grad; nor
does an integer or boolean tensor (routing indices, ``argsort``, a comparison's mask: autograd
never gives one a ``grad_fn``, checked on torch 2.13). When every value forward returns is one of
those, on every return path, no gradient can reach the Function: backward (its existence, its
return count, its grad parameters, a stub body) does not matter. Anything we cannot read counts
as differentiable, so the rules that ask stay as they were.
"""

from __future__ import annotations

import re
from typing import Callable, Optional

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.syntax import (
    call_keyword,
    constant_index,
    dotted,
    is_ctx_attr,
    is_none,
    positional_args,
    target_names,
)
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
    """Every value forward returns is marked non-differentiable, an integer or boolean tensor,
    or not a tensor."""
    forward = model.forward
    if forward is None or not forward.returns:
        return False
    if _every_output(model, forward, lambda _value: False):
        return True
    return model.style == "new" and _new_style_all_marked(model, forward)


# Names real code gives the index tensors a Function returns (mmcv's NMS `inds`, MoE routing's
# `expert_ids`, `sorted_idx`): a heuristic, used only to lower a severity.
_INDEX_OUTPUT_NAME = re.compile(r"^(\w+_)?(inds|indices|idx|idxs|index|ids|perm)$")


def index_named_outputs(model: FunctionModel) -> list[str]:
    """The names of the outputs, when every output the model cannot prove non-differentiable is
    a name real code gives index tensors (``inds = ext_module.nms(...)``: an extension fills
    it, so its dtype cannot be read); [] otherwise. A guess from names: a rule may lower its
    severity on it, never conclude."""
    forward = model.forward
    if forward is None or not forward.returns:
        return []
    guessed: list[str] = []

    def index_named(value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Name) and _INDEX_OUTPUT_NAME.match(value.value):
            guessed.append(value.value)
            return True
        return False

    return sorted(set(guessed)) if _every_output(model, forward, index_named) and guessed else []


def _every_output(model: FunctionModel, forward: Method, also: Callable[[cst.BaseExpression], bool]) -> bool:
    """Every value forward returns, on every return, needs no gradient (or passes ``also``)."""
    marked = _marked_names(forward, model.ctx_names(forward)) if model.style != "new" else set()
    judge = model.judge(forward)
    integers = IntegerJudge(forward, model.qualify)
    for ret in forward.returns:
        value = ret.value
        if isinstance(value, cst.Tuple):
            for element in value.elements:
                if not (_element_needs_no_grad(element, marked, judge, integers)
                        or (not isinstance(element, cst.StarredElement) and also(element.value))):
                    return False
        elif not (_value_needs_no_grad(value, marked, judge, integers) or (value is not None and also(value))):
            return False
    return True


def _element_needs_no_grad(element: cst.BaseElement, marked: set[str], judge: TensorJudge,
                           integers: "IntegerJudge") -> bool:
    """One element of a returned tuple: a marked name, an integer or boolean tensor, or anything
    certainly not a tensor (a list inside the tuple is one non-tensor output)."""
    if isinstance(element, cst.StarredElement):
        return False
    value = element.value
    if isinstance(value, cst.Name) and value.value in marked:
        return True
    return is_none(value) or judge(value) is Tensorness.NOT_TENSOR or integers.certain(value)


def _value_needs_no_grad(value: Optional[cst.BaseExpression], marked: set[str], judge: TensorJudge,
                         integers: "IntegerJudge") -> bool:
    """A whole returned value that is not a tuple literal. A name or call judged "not a tensor"
    may still be a tuple of tensors (``tuple(outs)``, ``result``), which PyTorch unpacks into
    outputs, so only literals, list and dict displays (PyTorch tracks no tensor inside one),
    marked names, integer or boolean tensors and scalar-valued calls count."""
    if value is None or is_none(value) or isinstance(value, _LITERALS + _CONTAINERS):
        return True
    if integers.certain(value):
        return True
    if isinstance(value, cst.Name):
        return value.value in marked
    if isinstance(value, cst.Call) and dotted(value.func) in ("tuple", "divmod"):
        return False
    return isinstance(value, cst.Call) and judge(value) is Tensorness.NOT_TENSOR


# A list, dict or set returned whole is one Python object to Function.apply, not outputs: no
# tensor inside it gets a grad_fn (checked on torch 2.13). A tuple is unpacked into outputs.
_CONTAINERS = (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)

# Results that are integer or boolean tensors whatever the inputs' dtype.
_INTEGER_RESULTS = frozenset(
    {"argsort", "argmax", "argmin", "nonzero", "argwhere", "searchsorted", "bucketize", "randperm",
     "multinomial", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "signbit",
     "logical_and", "logical_or", "logical_not", "logical_xor", "eq", "ne", "gt", "lt", "ge", "le",
     "greater", "less", "greater_equal", "less_equal", "not_equal", "isin", "long", "int", "short",
     "bool", "byte", "char", "count_nonzero", "tril_indices", "triu_indices"}
)
# Ops that return (values, indices): the second is an integer tensor (``.indices``).
_VALUES_AND_INDICES = frozenset({"topk", "sort", "max", "min", "kthvalue", "mode", "cummax", "cummin", "median"})
# Factories whose ``dtype=`` decides the result's dtype.
_FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "tensor", "as_tensor", "zeros_like", "ones_like",
     "empty_like", "full_like", "randint", "randint_like", "new_zeros", "new_ones", "new_empty",
     "new_full", "new_tensor", "range"}
)
_INTEGER_DTYPES = frozenset(
    {"int", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "long", "short",
     "bool", "uint1"}
)
# Tensor methods whose result has the receiver's dtype (views, copies, moves between devices).
_KEEPS_DTYPE = frozenset(
    {"view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "clone", "detach", "cpu", "cuda",
     "t", "transpose", "permute", "expand", "expand_as", "repeat", "flip", "narrow", "select",
     "index_select", "gather", "masked_select", "unflatten", "movedim"}
)
_INTEGER_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.BitAnd,
                      cst.BitOr, cst.BitXor, cst.LeftShift, cst.RightShift)


class IntegerJudge:
    """Is a value forward returns certainly an integer or boolean tensor (or a Python bool)?
    Only what the code itself says: a comparison, an index-producing op (``argsort``,
    ``topk(...).indices``), a conversion (``.long()``, ``.to(torch.int32)``), a factory with an
    integer ``dtype=``, arithmetic between such values and integer literals, and names every
    binding of which is one of those. Anything else is not certain."""

    def __init__(self, method: Method, qualify: Callable[[str], str]) -> None:
        self.method = method
        self.qualify = qualify
        self._bindings: Optional[dict[str, list[Optional[cst.BaseExpression]]]] = None

    def certain(self, node: cst.BaseExpression, visiting: frozenset[str] = frozenset()) -> bool:
        if isinstance(node, cst.Comparison):
            return all(not isinstance(c.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)) for c in node.comparisons)
        if isinstance(node, cst.Name):
            return self._name(node.value, visiting)
        if isinstance(node, cst.IfExp):
            return self.certain(node.body, visiting) and self.certain(node.orelse, visiting)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _INTEGER_OPERATORS):
            parts = (node.left, node.right)
            return (any(self.certain(p, visiting) for p in parts)
                    and all(isinstance(p, cst.Integer) or self.certain(p, visiting) for p in parts))
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
            return self.certain(node.expression, visiting)
        if isinstance(node, cst.Attribute) and node.attr.value == "indices":
            return self._values_and_indices(node.value)
        if isinstance(node, cst.Subscript):
            # `x.topk(k)[1]`; and indexing keeps the dtype: `valid_inds[inds]`, `ids[:n]`
            return (constant_index(node) == 1 and self._values_and_indices(node.value)) or self.certain(
                node.value, visiting)
        if isinstance(node, cst.Call):
            return self._call(node, visiting)
        return False

    def _call(self, call: cst.Call, visiting: frozenset[str] = frozenset()) -> bool:
        name = _op_name(call)
        if name is None:
            return False
        if isinstance(call.func, cst.Attribute) and name in _KEEPS_DTYPE:
            return self.certain(call.func.value, visiting)  # `ids.view(-1)`, `inds.cpu()`
        if isinstance(call.func, cst.Attribute) and name in ("to", "type"):
            dtype = call_keyword(call, "dtype")
            first = positional_args(call)[:1]
            return any(_integer_dtype(v, self.qualify) for v in ([dtype] if dtype is not None else [])
                       + [a.value for a in first])
        if name in _FACTORIES:
            dtype = call_keyword(call, "dtype")
            return dtype is not None and _integer_dtype(dtype, self.qualify)
        return name in _INTEGER_RESULTS and _is_torch_or_method(call, self.qualify)

    def _values_and_indices(self, node: cst.BaseExpression) -> bool:
        if not isinstance(node, cst.Call):
            return False
        name = _op_name(node)
        if name not in _VALUES_AND_INDICES or not _is_torch_or_method(node, self.qualify):
            return False
        if name in ("max", "min", "median"):  # only with a dim do they return indices
            return len(positional_args(node)) >= (2 if _is_torch_function(node, self.qualify) else 1) or (
                call_keyword(node, "dim") is not None)
        return True

    def _name(self, name: str, visiting: frozenset[str]) -> bool:
        if name in visiting or any(p.name == name for p in self.method.params):
            return False
        bindings = self._all_bindings().get(name)
        if not bindings:
            return False
        return all(value is not None and self.certain(value, visiting | {name}) for value in bindings)

    def _all_bindings(self) -> dict[str, list[Optional[cst.BaseExpression]]]:
        """Each local's values; ``values, indices = x.topk(k)`` binds ``indices`` to the
        ``.indices`` of the call, anything else unpacked to an unreadable value (None)."""
        if self._bindings is None:
            found: dict[str, list[Optional[cst.BaseExpression]]] = {}
            for target, value in self.method.binding_sites:
                if isinstance(target, cst.Name):
                    found.setdefault(target.value, []).append(value)
                elif isinstance(target, (cst.Tuple, cst.List)):
                    pair = len(target.elements) == 2 and not any(
                        isinstance(e, cst.StarredElement) for e in target.elements)
                    for position, element in enumerate(target.elements):
                        bound = None
                        if pair and position == 1 and value is not None and self._values_and_indices(value):
                            bound = cst.Attribute(value=value, attr=cst.Name("indices"))
                        for name in target_names(element.value):
                            found.setdefault(name, []).append(bound)
                else:
                    for name in target_names(target):
                        found.setdefault(name, []).append(None)
            for node in self.method.nodes_of(cst.AugAssign):  # `idx += offset`: may change dtype
                for name in target_names(node.target):
                    found.setdefault(name, []).append(None)
            self._bindings = found
        return self._bindings


def _op_name(call: cst.Call) -> Optional[str]:
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    if isinstance(call.func, cst.Name):
        return call.func.value
    return None


def _is_torch_function(call: cst.Call, qualify: Callable[[str], str]) -> bool:
    name = dotted(call.func)
    return name is not None and qualify(name).startswith("torch.")


def _is_torch_or_method(call: cst.Call, qualify: Callable[[str], str]) -> bool:
    """``torch.argsort(x)`` or ``x.argsort()``: not a helper of the project that shares the name."""
    if _is_torch_function(call, qualify):
        return True
    if not isinstance(call.func, cst.Attribute):
        return False
    receiver = dotted(call.func.value)
    return receiver is None or qualify(receiver).split(".")[0] not in ("numpy", "np", "math", "random")


def _integer_dtype(node: cst.BaseExpression, qualify: Callable[[str], str]) -> bool:
    """``torch.long``, ``torch.int32``, ``torch.bool`` (not a variable, which may be anything)."""
    name = dotted(node)
    if name is None or "." not in name:
        return False
    namespace, _, last = qualify(name).rpartition(".")
    return namespace == "torch" and last in _INTEGER_DTYPES


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
