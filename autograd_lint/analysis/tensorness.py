"""Is this name or expression a tensor? A conservative three-way judgement.

Every rule that cares (AGL201 ctx attributes, AGL202 saved values, AGL303/AGL304 receivers, ...)
asks here, so the knowledge lives in one place. ``UNKNOWN`` means "cannot decide": rules then
stay silent.
"""

from __future__ import annotations

import enum
import re
from typing import Callable, Iterable, Optional

import libcst as cst

from autograd_lint.analysis.syntax import call_keyword, dotted, positional_args


class T(enum.Enum):
    TENSOR = "tensor"
    NOT_TENSOR = "not-tensor"
    UNKNOWN = "unknown"


def combine(judgements: Iterable[Optional[T]]) -> T:
    """All agree -> that judgement; any disagreement or nothing known -> UNKNOWN."""
    seen = {j for j in judgements if j is not None}
    return seen.pop() if len(seen) == 1 else T.UNKNOWN


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
# Parameter names that, absent other evidence, are configuration rather than tensors.
NON_TENSOR_NAME = re.compile(
    r"^(dim|dims|axis|axes|eps|epsilon|p|n|size|shape|stride|strides|padding|dilation|groups|"
    r"kernel_size|mode|reduction|inplace|training|train|alpha|beta|gamma|lambd|lamda|scale|"
    r"softmax_scale|sm_scale|temperature|momentum|threshold|margin|ignore_index|value|fill_value|"
    r"causal|is_causal|dropout|dropout_p|dropout_prob|seed|offset|num_\w+|n_\w+|\w+_size|"
    r"\w+_dim|\w+_dims|is_\w+|use_\w+|has_\w+|do_\w+|enable_\w+|\w+_flag|flag|flags|layout|"
    r"block|block_\w+|\w+_fn|fn|func|function|module|layer|group|process_group|pg|config|cfg|"
    r"args|opts|options|name|dtype|device|\w+_dtype|out_dtype|ctx|chunks|chunk_size|split|"
    r"world_size|rank|level|verbose|debug|approximate|sparse|bidirectional|batch_first|"
    r"align_corners|interpolation|keepdim|unbiased|correction|descending|largest|sorted|"
    r"return_\w+|compute_\w+|normalize|norm|norm_type|max_norm|\w+_mode|mesh|\w+_group|"
    r"stream|handle|k_size|window|window_size|head_dim|num_heads|heads|src|dst|op|reduce_op|"
    r"\w+_sizes|sizes|\w+_splits|splits|tag|async_op)$"
)
AMBIGUOUS_NAME = re.compile(r"^(idx|index|i|j|start|end|step|pos|position|key)$")
_TENSOR_ANNOTATION = re.compile(r"\bTensor\b")
_OTHER_TYPE_IN_ANNOTATION = re.compile(r"\b(int|float|bool|str|complex|tuple|list|Tuple|List|Sequence|dict|Dict)\b")

# Methods whose positional arguments after the receiver are dims/sizes, not tensors.
_DIM_TAKING_METHODS = frozenset(
    {"size", "transpose", "sum", "mean", "view", "reshape", "permute", "unsqueeze", "squeeze",
     "flatten", "narrow", "select", "softmax", "log_softmax", "split", "chunk", "repeat", "expand",
     "topk", "cumsum", "cumprod", "movedim", "flip", "roll", "norm", "std", "var", "amax", "amin",
     "argmax", "argmin", "prod", "logsumexp", "unflatten", "new_zeros", "new_ones", "new_empty",
     "new_full", "view_as_real", "all", "any"}
)
_DIM_KEYWORDS = frozenset({"dim", "axis", "keepdim", "eps", "p", "dtype", "device", "size", "kernel_size",
                           "stride", "padding", "dilation", "groups", "alpha", "beta", "value",
                           "min", "max", "negative_slope", "approximate", "reduction", "ignore_index",
                           "start_dim", "end_dim", "dims", "shifts", "diagonal", "k", "sorted",
                           "largest", "descending", "chunks", "split_size_or_sections", "repeats",
                           "scale", "rounding_mode", "training", "inplace", "momentum"})


class TensorJudge:
    """Judges the tensor-ness of expressions inside one method.

    ``known`` gives the starting judgement of names (parameters, saved tensors); ``assignments``
    every value each local name is bound to (``None`` for a binding that cannot be read: a for
    target, a ``with`` target, an unpacking of a call). ``qualify`` resolves the first component of
    a dotted name through the module's imports (``F.relu`` -> ``torch.nn.functional.relu``).
    """

    def __init__(
        self,
        known: dict[str, T],
        assignments: dict[str, list],  # values: expressions, T judgements, or None
        qualify: Callable[[str], str],
        tensor_sources: Callable[[cst.BaseExpression], Optional[T]] = lambda _: None,
    ) -> None:
        self.known = known
        self.assignments = assignments
        self.qualify = qualify
        # A hook for facts only the class model knows: `ctx.saved_tensors[0]`, `ctx.x` attributes.
        self.tensor_sources = tensor_sources
        self._cache: dict[str, T] = {}

    def name(self, name: str, _visiting: frozenset[str] = frozenset()) -> Optional[T]:
        if name in _visiting:
            return None  # `x = x * 2`: the recursive reference adds nothing
        if not _visiting and name in self._cache:
            return self._cache[name]
        judgements: list[Optional[T]] = []
        if name in self.known:
            judgements.append(self.known[name])
        for value in self.assignments.get(name, []):
            if isinstance(value, T):
                judgements.append(value)
            else:
                judgements.append(T.UNKNOWN if value is None else self.expr(value, _visiting | {name}))
        if not judgements:
            result: Optional[T] = T.NOT_TENSOR if name in ("None", "True", "False") else T.UNKNOWN
        elif all(j is None for j in judgements):
            result = None
        else:
            result = combine(judgements)
        if not _visiting and result is not None:
            self._cache[name] = result
        return result

    def __call__(self, node: cst.BaseExpression) -> T:
        return self.expr(node) or T.UNKNOWN

    def expr(self, node: cst.BaseExpression, visiting: frozenset[str] = frozenset()) -> Optional[T]:
        special = self.tensor_sources(node)
        if special is not None:
            return special
        if isinstance(node, cst.Name):
            return self.name(node.value, visiting)
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                             cst.ConcatenatedString, cst.FormattedString, cst.Tuple, cst.List,
                             cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp,
                             cst.GeneratorExp, cst.Lambda, cst.Ellipsis)):
            return T.NOT_TENSOR
        if isinstance(node, cst.Attribute):
            return self._attribute(node, visiting)
        if isinstance(node, cst.Call):
            return self._call(node, visiting)
        if isinstance(node, cst.BinaryOperation):
            return self._operands([node.left, node.right], visiting)
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return T.NOT_TENSOR
            return self.expr(node.expression, visiting)
        if isinstance(node, cst.Comparison):
            if any(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in node.comparisons):
                return T.NOT_TENSOR
            return self._operands([node.left] + [t.comparator for t in node.comparisons], visiting)
        if isinstance(node, cst.BooleanOperation):
            return _combine_optional([self.expr(node.left, visiting), self.expr(node.right, visiting)])
        if isinstance(node, cst.IfExp):
            return _combine_optional([self.expr(node.body, visiting), self.expr(node.orelse, visiting)])
        if isinstance(node, cst.Subscript):
            receiver = self.expr(node.value, visiting)
            if receiver is T.TENSOR:
                return T.TENSOR
            if isinstance(node.value, cst.Attribute) and node.value.attr.value in ("shape", "stride"):
                return T.NOT_TENSOR
            return T.UNKNOWN
        return T.UNKNOWN

    def _operands(self, operands: list[cst.BaseExpression], visiting: frozenset[str]) -> Optional[T]:
        judgements = [self.expr(o, visiting) for o in operands]
        if T.TENSOR in judgements:
            return T.TENSOR
        known = [j for j in judgements if j is not None]
        if known and all(j is T.NOT_TENSOR for j in known):
            return T.NOT_TENSOR
        return None if not known else T.UNKNOWN

    def _attribute(self, node: cst.Attribute, visiting: frozenset[str]) -> Optional[T]:
        attr = node.attr.value
        if attr in NON_TENSOR_ATTRIBUTES:
            return T.NOT_TENSOR
        name = dotted(node)
        if name is not None:
            head = self.qualify(name).split(".")[0]
            if head in ("torch", "math", "numpy", "np", "sys", "os"):
                return T.NOT_TENSOR  # torch.float32, math.pi, ...
        if attr in TENSOR_ATTRIBUTES and self.expr(node.value, visiting) is T.TENSOR:
            return T.TENSOR
        return T.UNKNOWN

    def _call(self, node: cst.Call, visiting: frozenset[str]) -> Optional[T]:
        func = node.func
        name = dotted(func)
        if name is not None:
            qualified = self.qualify(name)
            if "." not in name:
                if name in _BUILTINS_NOT_TENSOR:
                    return T.NOT_TENSOR
                if qualified.startswith("torch."):
                    return _torch_call(qualified, node, tensor_args=1)
                return T.UNKNOWN
            if qualified.startswith("torch.") and not _is_method_on_local(name, self):
                return _torch_call(qualified, node, tensor_args=1)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = self.expr(func.value, visiting)
            if method in NON_TENSOR_METHODS:
                return T.NOT_TENSOR
            if receiver is T.TENSOR:
                if method in MULTI_RESULT and not _single_result(method, node, tensor_args=0):
                    return T.UNKNOWN
                return T.TENSOR
        return T.UNKNOWN


def _is_method_on_local(name: str, judge: TensorJudge) -> bool:
    head = name.split(".")[0]
    return head in judge.known or head in judge.assignments


# Namespaces whose functions compute tensors from tensors (torch.exp, F.relu, torch.linalg.qr...).
_TENSOR_NAMESPACES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft",
                      "torch.sparse", "torch.Tensor")
# Functions that return a tensor unrelated to the autograd graph (RNG state bytes).
_STATE_TORCH_FUNCTIONS = frozenset({"get_rng_state", "get_rng_state_all"})


def _torch_call(qualified: str, call: Optional[cst.Call] = None, tensor_args: int = 1) -> T:
    namespace, _, last = qualified.rpartition(".")
    if last in NON_TENSOR_TORCH_FUNCTIONS:
        return T.NOT_TENSOR
    if namespace not in _TENSOR_NAMESPACES or last in _STATE_TORCH_FUNCTIONS:
        return T.UNKNOWN  # torch.cuda.*, torch.distributed.*, torch._higher_order_ops.utils.* ...
    if last in MULTI_RESULT and not (call is not None and _single_result(last, call, tensor_args)):
        return T.UNKNOWN  # torch.max(x, 1) and torch.split(...) give several tensors
    if last[:1].isupper() or last.startswith("_"):
        return T.UNKNOWN  # torch.Size / torch.nn.Linear build objects
    return T.TENSOR


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


def _combine_optional(judgements: list[Optional[T]]) -> Optional[T]:
    known = [j for j in judgements if j is not None]
    return combine(known) if known else None


# --- forward inputs ---------------------------------------------------------------------------

def judge_parameter(
    name: str,
    annotation: Optional[str],
    default: Optional[cst.BaseExpression],
    uses: "ParameterUses",
    by_name: bool = True,
) -> T:
    """Tensor-ness of a forward input: annotation and default first, then how forward uses it,
    then (``by_name``) its name. Inputs are presumed tensors unless something says otherwise
    (rules.md)."""
    if annotation:
        mentions_tensor = _TENSOR_ANNOTATION.search(annotation) is not None
        mentions_other = _OTHER_TYPE_IN_ANNOTATION.search(annotation) is not None
        if mentions_tensor and mentions_other:
            return T.UNKNOWN  # Union[int, Tensor]
        if mentions_tensor:
            return T.TENSOR
        if annotation.strip() not in ("Any", "typing.Any", "object"):
            return T.NOT_TENSOR  # int, float, PackedSequence, ProcessGroup, ...
    if default is not None and not (isinstance(default, cst.Name) and default.value == "None"):
        return T.NOT_TENSOR
    if uses.as_tensor and uses.as_non_tensor:
        return T.UNKNOWN
    if uses.as_tensor:
        return T.TENSOR
    if uses.as_non_tensor:
        return T.NOT_TENSOR
    if default is not None:  # `=None` and never used as a tensor: an optional anything
        return T.UNKNOWN
    if not by_name:
        return T.TENSOR
    if NON_TENSOR_NAME.match(name):
        return T.NOT_TENSOR  # `group`, `dim`, `src` (a rank): configuration, even as first input
    if AMBIGUOUS_NAME.match(name):
        return T.UNKNOWN  # `idx` is an int as often as an index tensor
    return T.TENSOR


class ParameterUses:
    """How a method body uses one name: as a tensor (``x.shape``, ``torch.exp(x)``, saved) or as a
    plain value (``range(n)``, ``x.sum(dim=n)``)."""

    def __init__(self) -> None:
        self.as_tensor = False
        self.as_non_tensor = False


_TENSOR_ONLY_MEMBERS = NON_TENSOR_ATTRIBUTES | TENSOR_ATTRIBUTES | NON_TENSOR_METHODS | frozenset(
    {"view", "reshape", "contiguous", "transpose", "t", "permute", "clone", "detach", "exp", "log",
     "sum", "mean", "matmul", "mm", "bmm", "unsqueeze", "squeeze", "expand", "expand_as", "view_as",
     "to", "float", "double", "half", "bfloat16", "cuda", "cpu", "new_zeros", "new_ones", "new_empty",
     "new_full", "new_tensor", "sigmoid", "tanh", "relu", "flatten", "narrow", "masked_fill",
     "index_select", "gather", "scatter", "type_as", "abs", "sqrt", "pow", "norm", "softmax"}
)


def collect_parameter_uses(
    body_nodes: Iterable[cst.CSTNode], names: set[str], qualify: Callable[[str], str]
) -> dict[str, ParameterUses]:
    uses = {n: ParameterUses() for n in names}

    def target(node: cst.CSTNode) -> Optional[ParameterUses]:
        return uses.get(node.value) if isinstance(node, cst.Name) else None

    for node in body_nodes:
        if isinstance(node, cst.Attribute):
            use = target(node.value)
            if use is not None:
                member = node.attr.value
                if member in _TENSOR_ONLY_MEMBERS or (member.endswith("_") and not member.startswith("_")):
                    use.as_tensor = True
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
            for side in (node.left, node.right):
                use = target(side)
                if use is not None:
                    use.as_tensor = True
        elif isinstance(node, cst.Call):
            _call_uses(node, target, qualify)
    return uses


def _call_uses(node: cst.Call, target, qualify: Callable[[str], str]) -> None:
    name = dotted(node.func) or ""
    last = name.rsplit(".", 1)[-1]
    args = positional_args(node)
    if last in ("save_for_backward", "mark_dirty", "mark_non_differentiable"):
        for arg in args:
            use = target(arg.value)
            if use is not None:
                use.as_tensor = True
        return
    if name in ("range", "int", "bool") or (name == "isinstance" and len(args) == 2 and _is_plain_type(args[1].value)):
        if args:
            use = target(args[0].value)
            if use is not None:
                use.as_non_tensor = True
        return
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value in _DIM_KEYWORDS:
            use = target(arg.value)
            if use is not None:
                use.as_non_tensor = True
    qualified = qualify(name) if name else ""
    if qualified.startswith("torch.") and "." not in name.split(".")[0] and args:
        if _torch_call(qualified) is T.TENSOR and not qualified.startswith("torch.nn.functional.pad"):
            use = target(args[0].value)
            if use is not None:
                use.as_tensor = True
    if (isinstance(node.func, cst.Attribute) and node.func.attr.value in _DIM_TAKING_METHODS
            and not qualified.startswith("torch")):  # x.sum(n), not torch.logsumexp(x, ...)
        for arg in args:
            use = target(arg.value)
            if use is not None:
                use.as_non_tensor = True


def _is_plain_type(node: cst.BaseExpression) -> bool:
    names = [node] if not isinstance(node, cst.Tuple) else [e.value for e in node.elements]
    return all(isinstance(n, cst.Name) and n.value in ("int", "float", "bool", "str", "tuple", "list") for n in names)


def annotation_text(param: cst.Param) -> Optional[str]:
    if param.annotation is None:
        return None
    return cst.Module([]).code_for_node(param.annotation.annotation)


def keyword_is(call: cst.Call, name: str, value: str) -> bool:
    kw = call_keyword(call, name)
    return isinstance(kw, cst.Name) and kw.value == value
