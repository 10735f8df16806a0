"""Is a forward input a tensor? The evidence, in order of strength.

Real Functions take many inputs that are not tensors: sizes, flags, callables, process groups,
configs (a run over 32 published packages found hundreds of them stored on ctx;
docs/runtime-mechanisms.md, idioms). So an input counts as a tensor only on evidence:
0. what the project's ``.apply(...)`` calls pass for it: a number, string or tuple literal at
   every call site (mmcv's ``im2col_step: torch.Tensor``, always given ``64``): no;
1. its annotation (``Tensor``, ``torch.LongTensor``, ``nn.Parameter`` yes; ``int``, ``bool``,
   ``ProcessGroup`` no; an unknown class: cannot tell). It is weak evidence: it says "tensor"
   only when every member of a ``Union``/``Optional`` is a tensor (``Optional[Union[Tensor,
   AttentionBias]]`` may be the other class) and nothing contradicts it (a use as a plain
   value, or a member tensors do not have: then it says nothing);
2. its default (a number, string or tuple: no);
3. how forward, setup_context and backward use it (``x.view(...)``, ``torch.exp(x)``, ``x @ w``,
   ``save_for_backward(x)``: yes; ``fn(...)``, ``cfg.get(...)``, ``if flag:``, ``range(n)``,
   ``x.sum(dim=d)``: no) - uses of ``ctx.attr`` in backward count for the input stored there;
4. its name (``dim``, ``eps``, ``group``, ``max_seqlen_q``: no);
5. its position: forward's first input is a tensor unless something above says otherwise; any
   other input without evidence is unknown, and rules stay silent about it.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Iterable, Optional

import libcst as cst

from autograd_lint.analysis.syntax import dotted, positional_args
from autograd_lint.analysis.tensor_api import TENSOR_ATTRIBUTES
from autograd_lint.analysis.tensorness import Tensorness, torch_call_judgement

# Parameter names that, absent other evidence, are configuration rather than tensors.
NON_TENSOR_NAME = re.compile(
    r"^(dim|dims|dim_|axis|axes|eps|epsilon|p|n|size|shape|stride|strides|padding|dilation|groups|"
    r"kernel_size|mode|reduction|inplace|in_place|training|train|alpha|beta|gamma|lambd|lamda|"
    r"scale|softmax_scale|sm_scale|softcap|temperature|momentum|threshold|margin|ignore_index|"
    r"value|fill_value|causal|is_causal|deterministic|dropout|dropout_p|dropout_prob|seed|offset|"
    r"num_\w+|n_\w+|\w+_size|\w+_sizes|sizes|\w+_shape|\w+_dim|\w+_dims|is_\w+|use_\w+|has_\w+|"
    r"do_\w+|enable_\w+|async_\w+|\w+_flag|flag|flags|layout|block|block_\w+|\w+_fn|fn|func|"
    r"function|\w+_func|\w+_function|op|\w+_op|reduce_op|module|\w+_module|layer|layers|self|"
    r"group|process_group|pg|\w+_group|config|cfg|\w+_config|\w+_spec|\w+_handler|handler|"
    r"args|opts|options|name|dtype|device|\w+_dtype|ctx|chunks|chunk_size|split|\w+_splits|"
    r"splits|world_size|rank|\w+_rank|level|verbose|debug|approximate|sparse|bidirectional|"
    r"batch_first|align_corners|interpolation|keepdim|unbiased|correction|descending|largest|"
    r"sorted|return_\w+|compute_\w+|normalize|norm|norm_type|max_norm|\w+_mode|mesh|stream|"
    r"handle|k_size|window|window_size|head_dim|num_heads|heads|src|dst|tag|max_seqlen\w*|"
    r"max_s|topk|top_k|reverse|transpose|trans_\w+|power|BT|BK|BV|BLOCK\w*)$"
)
# Names that are an int as often as a tensor: no conclusion either way.
AMBIGUOUS_NAME = re.compile(r"^(idx|index|i|j|start|end|step|pos|position|key|\w+_idx)$")

_TENSOR_ANNOTATION = re.compile(r"\w*Tensor\b|\bParameter\b")
_CONTAINER_OR_SCALAR = re.compile(
    r"\b(int|float|bool|str|complex|bytes|tuple|list|dict|set|Tuple|List|Dict|Set|Sequence|"
    r"Iterable|Mapping|Callable)\b"
)
_NON_TENSOR_ANNOTATION = re.compile(
    r"^(Optional\[)?(typing\.)?(int|float|bool|str|complex|bytes|tuple|list|dict|set|Tuple|List|"
    r"Dict|Set|Sequence|Iterable|Mapping|Callable|Literal|torch\.dtype|dtype|torch\.device|device|"
    r"(dist\.|torch\.distributed\.)?ProcessGroup|\w*Config|\w*Mode)\b"
)
_NO_INFORMATION_ANNOTATIONS = frozenset({"Any", "typing.Any", "object"})

# Tensor members that nothing else a Function receives is likely to have (not `to`, `cuda`,
# `float`, `size`, `type`, `apply`: modules and process groups have those too).
# Members a tensor has as values, read without a call; every other member of the set below is a
# method, evidence only when called.
_TENSOR_PROPERTIES = frozenset(
    {"shape", "dtype", "ndim", "is_cuda", "requires_grad", "grad_fn", "is_leaf", "T", "mT", "data", "grad"})
_TENSOR_ONLY_MEMBERS = frozenset(
    {"shape", "dtype", "ndim", "is_cuda", "requires_grad", "grad_fn", "is_leaf", "view", "reshape",
     "contiguous", "transpose", "t", "T", "mT", "permute", "clone", "detach", "exp", "log", "sum",
     "mean", "matmul", "mm", "bmm", "unsqueeze", "squeeze", "expand", "expand_as", "view_as",
     "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "sigmoid", "tanh", "relu",
     "flatten", "narrow", "masked_fill", "index_select", "gather", "scatter", "type_as", "abs",
     "sqrt", "pow", "softmax", "numel", "dim", "element_size", "data_ptr", "stride",
     "is_contiguous", "item", "tolist", "storage_offset", "untyped_storage", "data", "grad",
     "chunk", "split", "unbind", "max", "min", "amax", "argmax", "clamp", "masked_select", "any",
     "all", "long", "int", "bool", "nelement", "is_floating_point",
     "stride", "narrow_copy", "index_add", "index_put", "scatter_add", "square", "rsqrt", "neg"}
)
# Methods whose positional arguments after the receiver are dims/sizes, not tensors.
_DIM_TAKING_METHODS = frozenset(
    {"size", "transpose", "sum", "mean", "view", "reshape", "permute", "unsqueeze", "squeeze",
     "flatten", "narrow", "select", "softmax", "log_softmax", "split", "chunk", "repeat", "expand",
     "topk", "cumsum", "cumprod", "movedim", "flip", "roll", "norm", "std", "var", "amax", "amin",
     "argmax", "argmin", "prod", "logsumexp", "unflatten", "new_zeros", "new_ones", "new_empty",
     "new_full", "view_as_real", "all", "any"}
)
_DIM_KEYWORDS = frozenset(
    {"dim", "axis", "keepdim", "eps", "p", "dtype", "device", "size", "kernel_size", "stride",
     "padding", "dilation", "groups", "alpha", "beta", "value", "min", "max", "negative_slope",
     "approximate", "reduction", "ignore_index", "start_dim", "end_dim", "dims", "shifts",
     "diagonal", "k", "sorted", "largest", "descending", "chunks", "split_size_or_sections",
     "repeats", "scale", "rounding_mode", "training", "inplace", "momentum"}
)
# torch functions that take tensors in every positional argument (F.linear(x, w, b), x @ w ...).
_ALL_TENSOR_ARGS = frozenset(
    {"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "mul", "add", "sub", "div", "maximum",
     "minimum", "atan2", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
     "conv_transpose2d", "conv_transpose3d", "embedding", "mv", "dot", "outer", "cross", "kron",
     "layer_norm", "group_norm", "batch_norm", "einsum", "cat", "stack", "lerp", "addcmul",
     "addcdiv", "mse_loss", "cross_entropy", "nll_loss", "binary_cross_entropy", "kl_div"}
)
# Factories and tensor methods whose arguments are sizes: `torch.empty(n, h)`, `x.new_zeros((n, h))`.
_SIZE_TAKING = frozenset({"empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange",
                          "new_zeros", "new_ones", "new_empty", "new_full", "view", "reshape",
                          "expand", "repeat"})


class ParameterUses:
    """How Function code uses one input: as a tensor, as a plain value (``range(n)``, ``if flag``,
    ``fn(...)``), or with a member tensors do not have (``cfg.get``: weaker, since a Tensor
    subclass may add members)."""

    def __init__(self) -> None:
        self.as_tensor = False
        self.as_non_tensor = False
        self.foreign_member = False


# Kinds of literal an `.apply(...)` call can pass (project.literal_kind): none is a tensor.
NON_TENSOR_LITERALS = frozenset({"int", "float", "complex", "str", "bytes", "bool", "tuple"})


def judge_parameter(
    name: str,
    annotation: Optional[str],
    default: Optional[cst.BaseExpression],
    uses: ParameterUses,
    is_first: bool,
    by_name: bool = True,
    passed: Optional[frozenset[str]] = None,
) -> Tensorness:
    """Tensor-ness of a forward input (see the module docstring for the order of evidence).
    ``by_name=False`` leaves out the name and position: what remains is certain evidence.
    ``passed``: the kinds of literal that every ``.apply(...)`` call of the project passes for
    this input (None: some call passes something else, or no call is known)."""
    literals = passed - {"None"} if passed is not None else frozenset()
    if literals and literals <= NON_TENSOR_LITERALS:
        return Tensorness.NOT_TENSOR  # `im2col_step: torch.Tensor`, and every caller passes `64`
    if annotation and annotation.strip() not in _NO_INFORMATION_ANNOTATIONS:
        judged = _annotation_judgement(annotation)
        contradicted = (uses.as_non_tensor or uses.foreign_member) and not uses.as_tensor
        return Tensorness.UNKNOWN if judged is Tensorness.TENSOR and contradicted else judged
    if default is not None and not (isinstance(default, cst.Name) and default.value == "None"):
        # `eps=1e-5`, `dims=(0, 1)`: not a tensor; `scale=torch.tensor(1)`: cannot tell cheaply.
        return Tensorness.NOT_TENSOR if _is_literal(default) else Tensorness.UNKNOWN
    if uses.as_tensor and (uses.as_non_tensor or uses.foreign_member):
        return Tensorness.UNKNOWN
    if uses.as_tensor:
        return Tensorness.TENSOR
    if uses.as_non_tensor:
        return Tensorness.NOT_TENSOR
    if not by_name or default is not None:  # `bias=None` unused: an optional anything
        return Tensorness.UNKNOWN
    if uses.foreign_member:
        return Tensorness.NOT_TENSOR
    if NON_TENSOR_NAME.match(name):
        return Tensorness.NOT_TENSOR
    if AMBIGUOUS_NAME.match(name):
        return Tensorness.UNKNOWN
    return Tensorness.TENSOR if is_first else Tensorness.UNKNOWN


def _annotation_judgement(annotation: str) -> Tensorness:
    if _TENSOR_ANNOTATION.search(annotation):
        # Optional[Tensor] is a tensor; Union[int, Tensor], Optional[Union[Tensor, AttentionBias]]
        # and List[Tensor] are not certainly one tensor.
        if _CONTAINER_OR_SCALAR.search(annotation):
            return Tensorness.UNKNOWN
        members = _union_members(annotation)
        if members is None or not all(_TENSOR_TYPE.fullmatch(m) for m in members):
            return Tensorness.UNKNOWN
        return Tensorness.TENSOR
    if _NON_TENSOR_ANNOTATION.match(annotation.strip()):
        return Tensorness.NOT_TENSOR
    return Tensorness.UNKNOWN  # a class we do not know: it may be a Tensor subclass (EdgeIndex, NF4Tensor)


_TENSOR_TYPE = re.compile(r"(\w+\.)*(\w*Tensor|Parameter)")


def _union_members(annotation: str) -> Optional[list[str]]:
    """The types an annotation allows besides None, as dotted names (``Optional[Union[Tensor,
    AttentionBias]]`` -> ``Tensor``, ``AttentionBias``); a member that is no plain dotted name
    (``List[Tensor]``) is kept as its text. None when the text does not parse."""
    try:
        node = ast.parse(annotation.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    members: list[str] = []
    pending = [node]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "torch.Tensor"
            try:
                pending.append(ast.parse(node.value.strip(), mode="eval").body)
            except (SyntaxError, ValueError):
                return None
        elif isinstance(node, ast.Constant) and node.value is None:
            continue
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # Tensor | None
            pending += [node.left, node.right]
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value).rpartition(".")[2] in ("Optional", "Union"):
            inner = node.slice
            pending += list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        else:
            members.append(ast.unparse(node))
    return members


def _is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False")
    if isinstance(node, cst.UnaryOperation):
        return _is_literal(node.expression)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_is_literal(e.value) for e in node.elements)
    return False


Target = Callable[[cst.CSTNode], Optional[ParameterUses]]


# The only node classes collect_uses looks at (callers may pass just these).
USE_NODE_CLASSES = (cst.Attribute, cst.BinaryOperation, cst.If, cst.While, cst.IfExp, cst.UnaryOperation,
                    cst.BooleanOperation, cst.Slice, cst.Call, cst.ClassDef)


def collect_uses(nodes: Iterable[cst.CSTNode], target: Target, qualify: Callable[[str], str]) -> None:
    """Record in ``target(node).as_tensor/as_non_tensor`` every telling use among ``nodes``.
    ``target`` maps an expression (an input's name, or ``ctx.attr`` holding it) to its uses."""
    nodes = list(nodes)
    called = {id(node.func) for node in nodes if isinstance(node, cst.Call)}
    for node in nodes:
        if isinstance(node, cst.Attribute):
            use = target(node.value)
            if use is not None:
                member = node.attr.value
                if member in _TENSOR_PROPERTIES or (id(node) in called and (
                        member in _TENSOR_ONLY_MEMBERS or (member.endswith("_") and member in TENSOR_ATTRIBUTES))):
                    use.as_tensor = True
                elif id(node) not in called and member in _TENSOR_ONLY_MEMBERS:
                    # A tensor method read as a value (`number.exp`, `fmt.clamp == True`): the data
                    # of some other object (qtorch's number formats), not a tensor's method.
                    use.foreign_member = True
                elif member not in TENSOR_ATTRIBUTES and not member.startswith("__"):
                    use.foreign_member = True  # `cfg.get`, `group.rank`, `runner.status`
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
            _mark(target, [node.left, node.right], tensor=True)
        elif isinstance(node, (cst.If, cst.While, cst.IfExp)):
            _mark(target, [node.test], tensor=False)  # `if flag:` raises for a multi-element tensor
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            _mark(target, [node.expression], tensor=False)
        elif isinstance(node, cst.BooleanOperation):
            _mark(target, [node.left, node.right], tensor=False)
        elif isinstance(node, cst.Slice):
            _mark(target, [v for v in (node.lower, node.upper, node.step) if v is not None], tensor=False)
        elif isinstance(node, cst.Call):
            _call_uses(node, target, qualify)
        elif isinstance(node, cst.ClassDef):
            # `class Checkpointed(cls):` a base class (torch-struct's semiring factories), not a
            # tensor, whatever methods it shares a name with (`cls.matmul(a, b)`)
            _mark(target, [base.value for base in node.bases], tensor=False)


def _mark(target: Target, nodes: Iterable[cst.CSTNode], tensor: bool) -> None:
    for node in nodes:
        use = target(node)
        if use is not None:
            if tensor:
                use.as_tensor = True
            else:
                use.as_non_tensor = True


def _call_uses(node: cst.Call, target: Target, qualify: Callable[[str], str]) -> None:
    callee = target(node.func)
    if callee is not None:
        callee.as_non_tensor = True  # `fn(x)`, `ctx.backward_op(...)`: a callable
        return
    name = dotted(node.func) or ""
    last = name.rsplit(".", 1)[-1]
    args = positional_args(node)
    values = [a.value for a in args]
    if last in ("save_for_backward", "mark_dirty", "mark_non_differentiable"):
        _mark(target, values, tensor=True)
        return
    if name in ("range", "int", "bool") or (name == "isinstance" and len(values) == 2 and _is_plain_type(values[1])):
        _mark(target, values[:1], tensor=False)
        return
    _mark(target, [a.value for a in node.args if a.keyword is not None and a.keyword.value in _DIM_KEYWORDS],
          tensor=False)
    qualified = qualify(name) if name else ""
    is_torch_function = qualified.startswith("torch.") and not _receiver_is_local(node, target)
    if is_torch_function and last in _SIZE_TAKING or (isinstance(node.func, cst.Attribute) and last in _SIZE_TAKING):
        sizes = values[1:] if is_torch_function and last in ("full",) else values
        _mark(target, [e.value for v in sizes if isinstance(v, (cst.Tuple, cst.List)) for e in v.elements],
              tensor=False)
        if is_torch_function:
            _mark(target, values, tensor=False)
            return
    if is_torch_function and values and torch_call_judgement(qualified) is Tensorness.TENSOR:
        _mark(target, values if last in _ALL_TENSOR_ARGS else values[:1], tensor=True)
    if isinstance(node.func, cst.Attribute) and last in _DIM_TAKING_METHODS and not is_torch_function:
        _mark(target, values, tensor=False)  # x.sum(d), x.view(n, -1)


def _receiver_is_local(node: cst.Call, target: Target) -> bool:
    func = node.func
    while isinstance(func, cst.Attribute):
        func = func.value
    return target(func) is not None


def _is_plain_type(node: cst.BaseExpression) -> bool:
    names = [node] if not isinstance(node, cst.Tuple) else [e.value for e in node.elements]
    return all(isinstance(n, cst.Name) and n.value in ("int", "float", "bool", "str", "tuple", "list") for n in names)


def annotation_text(param: cst.Param) -> Optional[str]:
    if param.annotation is None:
        return None
    return cst.Module([]).code_for_node(param.annotation.annotation)
