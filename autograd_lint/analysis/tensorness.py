"""Is this name or expression a tensor? A conservative three-way judgement.

Every rule that cares (AGL201 ctx attributes, AGL202 saved values, AGL303/AGL304 receivers, ...)
asks here, so the knowledge lives in one place. ``UNKNOWN`` means "cannot decide": rules then
stay silent.
"""

from __future__ import annotations

import enum
from typing import Callable, Iterable, Optional

import libcst as cst

from autograd_lint.analysis.syntax import dotted, is_none, last_name, positional_args


class Tensorness(enum.Enum):
    TENSOR = "tensor"
    NOT_TENSOR = "not-tensor"
    UNKNOWN = "unknown"


def combine(judgements: Iterable[Optional[Tensorness]]) -> Tensorness:
    """All agree -> that judgement; any disagreement or nothing known -> UNKNOWN."""
    seen = {j for j in judgements if j is not None}
    return seen.pop() if len(seen) == 1 else Tensorness.UNKNOWN


# Tensor attributes that are not tensors themselves.
NON_TENSOR_ATTRIBUTES = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "is_sparse", "is_quantized", "is_meta",
     "requires_grad", "layout", "names", "itemsize", "nbytes", "is_leaf", "grad_fn", "_version"}
)
# Tensor attributes that are tensors (views or companions of the receiver).
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
# Tensor methods whose result is not a tensor.
NON_TENSOR_METHODS = frozenset(
    {"size", "dim", "ndimension", "numel", "nelement", "item", "tolist", "numpy", "data_ptr",
     "stride", "storage_offset", "element_size", "get_device", "is_contiguous", "is_floating_point",
     "is_complex", "is_signed", "is_set_to", "is_pinned", "is_shared", "untyped_storage", "storage",
     "__len__", "type", "dim_order", "is_nonzero", "equal", "has_names", "register_hook",
     "backward", "retain_grad", "record_stream", "is_inference", "allclose"}
)
# Tensor methods / torch functions that return several tensors (a tuple or a named tuple).
MULTI_RESULT = frozenset(
    {"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "sort", "topk",
     "kthvalue", "mode", "median", "max", "min", "aminmax", "unique", "unique_consecutive", "svd",
     "qr", "eig", "eigh", "slogdet", "lu", "lstsq", "frexp", "cummax", "cummin", "nonzero_static",
     "meshgrid", "broadcast_tensors", "var_mean", "std_mean", "histogram", "where"}
)
# torch.<name>(...) calls that do not return a tensor.
NON_TENSOR_TORCH_FUNCTIONS = frozenset(
    {"is_tensor", "is_storage", "numel", "is_floating_point", "is_complex", "is_grad_enabled",
     "is_inference_mode_enabled", "get_default_dtype", "result_type", "promote_types", "can_cast",
     "Size", "device", "dtype", "finfo", "iinfo", "Generator", "no_grad", "enable_grad",
     "set_grad_enabled", "inference_mode", "get_autocast_gpu_dtype", "get_autocast_dtype",
     "is_autocast_enabled", "are_deterministic_algorithms_enabled", "manual_seed", "initial_seed",
     "seed", "typename", "is_nonzero", "equal", "allclose", "broadcast_shapes", "compile",
     "get_num_threads", "set_num_threads", "Stream", "Event", "empty_cache"}
)
# torch sub-namespaces whose functions mostly do not compute tensors from tensors.
NON_TENSOR_TORCH_NAMESPACES = (
    "torch.cuda", "torch.distributed", "torch.jit", "torch.backends", "torch._C", "torch.autograd",
    "torch.utils", "torch.compiler", "torch._dynamo", "torch.library", "torch.ops", "torch.fx",
    "torch.overrides", "torch.cpu", "torch.mps", "torch.xpu", "torch.amp", "torch.accelerator",
    "torch._utils", "torch.testing", "torch.hub", "torch.onnx", "torch.profiler",
)
_BUILTINS_NOT_TENSOR = frozenset(
    {"len", "int", "float", "bool", "str", "tuple", "list", "dict", "set", "range", "isinstance",
     "hasattr", "getattr_static", "type", "id", "repr", "enumerate", "zip", "sorted", "divmod",
     "round", "hash", "callable", "issubclass", "frozenset", "slice", "iter"}
)
class TensorJudge:
    """Judges the tensor-ness of expressions inside one method.

    ``known`` gives the starting judgement of names (parameters, saved tensors); ``assignments``
    every value each local name is bound to (``None`` for a binding that cannot be read: a for
    target, a ``with`` target, an unpacking of a call). ``qualify`` resolves the first component of
    a dotted name through the module's imports (``F.relu`` -> ``torch.nn.functional.relu``).
    """

    def __init__(
        self,
        known: dict[str, Tensorness],
        assignments: dict[str, list],  # values: expressions, T judgements, or None
        qualify: Callable[[str], str],
        tensor_sources: Callable[[cst.BaseExpression], Optional[Tensorness]] = lambda _: None,
    ) -> None:
        self.known = known
        self.assignments = assignments
        self.qualify = qualify
        # A hook for facts only the class model knows: `ctx.saved_tensors[0]`, `ctx.x` attributes.
        self.tensor_sources = tensor_sources
        self._cache: dict[str, Tensorness] = {}

    def name(self, name: str, _visiting: frozenset[str] = frozenset()) -> Optional[Tensorness]:
        if name in _visiting:
            # `x = x.contiguous()`: the x on the right is the value before, a parameter's if any.
            return self.known.get(name)
        if not _visiting and name in self._cache:
            return self._cache[name]
        judgements: list[Optional[Tensorness]] = []
        if name in self.known:
            judgements.append(self.known[name])
        for value in self.assignments.get(name, []):
            if isinstance(value, Tensorness):
                judgements.append(value)
            else:
                judgements.append(Tensorness.UNKNOWN if value is None else self.expr(value, _visiting | {name}))
        if not judgements:
            result: Optional[Tensorness] = Tensorness.NOT_TENSOR if name in ("None", "True", "False") else Tensorness.UNKNOWN
        elif all(j is None for j in judgements):
            result = None
        else:
            result = combine(judgements)
        if not _visiting and result is not None:
            self._cache[name] = result
        return result

    def __call__(self, node: cst.BaseExpression) -> Tensorness:
        return self.expr(node) or Tensorness.UNKNOWN

    def expr(self, node: cst.BaseExpression, visiting: frozenset[str] = frozenset()) -> Optional[Tensorness]:
        special = self.tensor_sources(node)
        if special is not None:
            return special
        if isinstance(node, cst.Name):
            return self.name(node.value, visiting)
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                             cst.ConcatenatedString, cst.FormattedString, cst.Tuple, cst.List,
                             cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp,
                             cst.GeneratorExp, cst.Lambda, cst.Ellipsis)):
            return Tensorness.NOT_TENSOR
        if isinstance(node, cst.Attribute):
            return self._attribute(node, visiting)
        if isinstance(node, cst.Call):
            return self._call(node, visiting)
        if isinstance(node, cst.BinaryOperation):
            return self._operands([node.left, node.right], visiting)
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return Tensorness.NOT_TENSOR
            return self.expr(node.expression, visiting)
        if isinstance(node, cst.Comparison):
            if any(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in node.comparisons):
                return Tensorness.NOT_TENSOR
            return self._operands([node.left] + [t.comparator for t in node.comparisons], visiting)
        if isinstance(node, cst.BooleanOperation):
            return _combine_optional([self.expr(node.left, visiting), self.expr(node.right, visiting)])
        if isinstance(node, cst.IfExp):
            return _combine_optional([self.expr(node.body, visiting), self.expr(node.orelse, visiting)])
        if isinstance(node, cst.Subscript):
            receiver = self.expr(node.value, visiting)
            if receiver is Tensorness.TENSOR:
                return Tensorness.TENSOR
            if isinstance(node.value, cst.Attribute) and node.value.attr.value in ("shape", "stride"):
                return Tensorness.NOT_TENSOR
            return Tensorness.UNKNOWN
        return Tensorness.UNKNOWN

    def is_list(self, node: cst.BaseExpression, _visiting: frozenset[str] = frozenset()) -> bool:
        """Is ``node`` certainly a Python list? A list display or comprehension, ``list(...)`` or
        ``sorted(...)``, a list concatenated with a list or repeated (``[g] + [None] * 4``), a
        conditional with a list in both branches, or a local name whose every binding is one of
        these (``grads = []`` then ``grads.append(g)``: appending keeps it a list).

        autograd takes a backward's value as several gradients only when it is a tuple: a list is
        one value (docs/runtime-mechanisms.md, F1), so how backward's values are counted asks
        here. False means "not certainly": a parameter, a name with a binding that cannot be
        read or that is not a list (``grads = tuple(grads)``), a call out of the file."""
        if isinstance(node, (cst.List, cst.ListComp)):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("list", "sorted"):
            name = node.func.value  # the builtin, unless the file rebinds it
            return self.qualify(name) == name and name not in self.assignments and name not in self.known
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Add):
                return self.is_list(node.left, _visiting) and self.is_list(node.right, _visiting)
            if isinstance(node.operator, cst.Multiply):  # `[None] * 4`, `4 * [None]`
                return ((self.is_list(node.left, _visiting) and isinstance(node.right, cst.Integer))
                        or (isinstance(node.left, cst.Integer) and self.is_list(node.right, _visiting)))
            return False
        if isinstance(node, cst.IfExp):
            return self.is_list(node.body, _visiting) and self.is_list(node.orelse, _visiting)
        if isinstance(node, cst.Name) and node.value not in self.known:
            if node.value in _visiting:
                return True  # `grads = grads + [g]`: a list if its other bindings are
            bound = self.assignments.get(node.value, [])
            return bool(bound) and all(isinstance(value, cst.BaseExpression)
                                       and self.is_list(value, _visiting | {node.value}) for value in bound)
        return False

    def _operands(self, operands: list[cst.BaseExpression], visiting: frozenset[str]) -> Optional[Tensorness]:
        if any(isinstance(o, (cst.Tuple, cst.List)) for o in operands):
            return Tensorness.NOT_TENSOR  # `(None, None) + grads`: a tuple concatenation
        judgements = [self.expr(o, visiting) for o in operands]
        if Tensorness.TENSOR in judgements:
            return Tensorness.TENSOR
        known = [j for j in judgements if j is not None]
        if known and all(j is Tensorness.NOT_TENSOR for j in known):
            return Tensorness.NOT_TENSOR
        return None if not known else Tensorness.UNKNOWN

    def _attribute(self, node: cst.Attribute, visiting: frozenset[str]) -> Optional[Tensorness]:
        attr = node.attr.value
        if attr in NON_TENSOR_ATTRIBUTES:
            return Tensorness.NOT_TENSOR
        name = dotted(node)
        if name is not None:
            head = self.qualify(name).split(".")[0]
            if head in ("torch", "math", "numpy", "np", "sys", "os"):
                return Tensorness.NOT_TENSOR  # torch.float32, math.pi, ...
        if attr in TENSOR_ATTRIBUTES and self.expr(node.value, visiting) is Tensorness.TENSOR:
            return Tensorness.TENSOR
        return Tensorness.UNKNOWN

    def _call(self, node: cst.Call, visiting: frozenset[str]) -> Optional[Tensorness]:
        func = node.func
        name = dotted(func)
        if name is not None:
            qualified = self.qualify(name)
            if "." not in name:
                if name in _BUILTINS_NOT_TENSOR:
                    return Tensorness.NOT_TENSOR
                if qualified.startswith("torch."):
                    return torch_call_judgement(qualified, node, tensor_args=1)
                return Tensorness.UNKNOWN
            if qualified.startswith("torch.") and not _is_method_on_local(name, self):
                return torch_call_judgement(qualified, node, tensor_args=1)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = self.expr(func.value, visiting)
            if method == "type" and _converts_type(node):
                # `x.type(torch.int8)`, `x.type(dtype)`: the tensor converted; only the bare
                # `x.type()` is the type's name, a string.
                return Tensorness.TENSOR if receiver is Tensorness.TENSOR else Tensorness.UNKNOWN
            if method in NON_TENSOR_METHODS:
                return Tensorness.NOT_TENSOR
            if receiver is Tensorness.TENSOR:
                if method in MULTI_RESULT and not _single_result(method, node, tensor_args=0):
                    return Tensorness.UNKNOWN
                return Tensorness.TENSOR
        return Tensorness.UNKNOWN


def _converts_type(call: cst.Call) -> bool:
    """``.type(dtype)`` or ``.type(dtype=...)``: Tensor.type's conversion form."""
    return bool(positional_args(call)) or any(a.keyword is not None and a.keyword.value == "dtype" for a in call.args)


def _is_method_on_local(name: str, judge: TensorJudge) -> bool:
    head = name.split(".")[0]
    return head in judge.known or head in judge.assignments


# Namespaces whose functions compute tensors from tensors (torch.exp, F.relu, torch.linalg.qr...).
_TENSOR_NAMESPACES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft",
                      "torch.sparse", "torch.Tensor")
_PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                                "torch.nn.parameter.Buffer"})
# Functions that return a tensor unrelated to the autograd graph (RNG state bytes).
_STATE_TORCH_FUNCTIONS = frozenset({"get_rng_state", "get_rng_state_all"})


def torch_call_judgement(qualified: str, call: Optional[cst.Call] = None, tensor_args: int = 1) -> Tensorness:
    """What ``torch.<...>(...)`` returns: a tensor for ops of the tensor namespaces."""
    if qualified in _PARAMETER_CLASSES:
        return Tensorness.TENSOR  # a Parameter is a Tensor subclass
    namespace, _, last = qualified.rpartition(".")
    if last in NON_TENSOR_TORCH_FUNCTIONS:
        return Tensorness.NOT_TENSOR
    if namespace not in _TENSOR_NAMESPACES or last in _STATE_TORCH_FUNCTIONS:
        return Tensorness.UNKNOWN  # torch.cuda.*, torch.distributed.*, torch._higher_order_ops.utils.* ...
    if last in MULTI_RESULT and not (call is not None and _single_result(last, call, tensor_args)):
        return Tensorness.UNKNOWN  # torch.max(x, 1) and torch.split(...) give several tensors
    if last[:1].isupper() or last.startswith("_"):
        return Tensorness.UNKNOWN  # torch.Size / torch.nn.Linear build objects
    return Tensorness.TENSOR


# Of the MULTI_RESULT functions, these return one tensor when called without a dimension:
# x.max(), torch.max(x), torch.median(x); torch.where(cond, a, b) (three arguments) is one tensor.
_SINGLE_WITHOUT_DIM = frozenset({"max", "min", "median", "nanmedian"})


def _single_result(name: str, call: cst.Call, tensor_args: int) -> bool:
    """Does this call of a MULTI_RESULT function return one tensor? ``tensor_args`` is how many
    leading positional arguments are the tensors themselves (1 for torch.max(x), 0 for x.max())."""
    positional = positional_args(call)
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    if name == "where":
        return len(positional) == 3
    if name in _SINGLE_WITHOUT_DIM:
        extra = positional[tensor_args:]
        if "dim" in keywords:
            return False
        # x.max() / torch.max(x); x.max(other) (elementwise) when the argument is not a number
        return not extra or (len(extra) == 1 and not isinstance(extra[0].value, (cst.Integer, cst.UnaryOperation)))
    return False


def _combine_optional(judgements: list[Optional[Tensorness]]) -> Optional[Tensorness]:
    known = [j for j in judgements if j is not None]
    return combine(known) if known else None


_ZERO_FACTORIES = frozenset({"zeros", "zeros_like", "new_zeros"})


def is_zero_gradient(value: Optional[cst.BaseExpression], judge: Optional["TensorJudge"] = None) -> bool:
    """``None``, ``torch.zeros_like(x)``, ``x.new_zeros(...)``, ``0``, ``(None,) * n``, or a name
    only ever bound to those: a deliberate absent or zero gradient, not one that ignores
    grad_output."""
    if value is None or is_none(value):
        return True
    if isinstance(value, (cst.Integer, cst.Float)):
        return float(value.evaluated_value) == 0.0
    if isinstance(value, cst.Call):
        return last_name(value.func) in _ZERO_FACTORIES
    if isinstance(value, cst.IfExp):
        return is_zero_gradient(value.body, judge) and is_zero_gradient(value.orelse, judge)
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(is_zero_gradient(e.value, judge) for e in value.elements if not isinstance(e, cst.StarredElement))
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        return is_zero_gradient(value.left, judge) and isinstance(value.left, (cst.Tuple, cst.List))
    if isinstance(value, cst.Name) and judge is not None:
        bound = judge.assignments.get(value.value)
        return bool(bound) and value.value not in judge.known and all(
            isinstance(b, cst.BaseExpression) and is_zero_gradient(b, judge) for b in bound
        )
    return False
