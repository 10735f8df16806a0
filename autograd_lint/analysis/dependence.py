"""Which forward inputs certainly reach forward's outputs with a non-zero derivative.

An under-approximation, the opposite of ``ProvenanceModel.outputs_read_input_values`` (which
over-approximates what outputs may read): an input counts only when plain differentiable
arithmetic carries it into a returned value along some path through forward (``flow.
enumerate_paths``): ``+ - * / @ **``, matmul, linear, convolutions, einsum, elementwise math,
reductions, views and copies. Everything else breaks the chain, so the answer is "not certain":

- ops whose derivative is zero almost everywhere (``round``, ``floor``, ``sign``, ``argmax``,
  comparisons, ``.long()``), and ``.detach()``/``.data``: a ``None`` gradient is right there
  (straight-through estimators and quantizers rely on it);
- the arguments of ops that are not differentiable in them: an index (``gather``,
  ``index_select``, ``embedding``'s input, subscripts), the condition of ``torch.where``, the
  bounds of ``clamp``, a mask, batch norm's running statistics;
- calls of anything else (helpers, compiled kernels, ``ctx.fn``): what they compute is unknown,
  and a local passed to one may be overwritten, so it loses its inputs too;
- item assignment (``out[i] = v``) and loops' targets rebind what they touch.

The rules ask ``certain_inputs(model)``: input position -> the first forward ``return`` whose
values carry it (AGL308 reports a ``None`` gradient for such an input).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from autograd_lint.analysis.flow import enumerate_paths
from autograd_lint.analysis.syntax import code_children, dotted, is_ctx_attr, target_names

if TYPE_CHECKING:
    from autograd_lint.analysis.class_model import FunctionModel, Method

Sources = frozenset[str]
_NONE: Sources = frozenset()

# Binary operators differentiable in both operands (`//`, `%`, bit operations are not).
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.Power)
_AUGMENTED = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign,
              cst.MatrixMultiplyAssign, cst.PowerAssign)

# Tensor methods whose result carries the receiver with a non-zero derivative; their arguments
# are dims, sizes or dtypes (never differentiated).
_RECEIVER_METHODS = frozenset(
    {"view", "view_as", "reshape", "reshape_as", "t", "transpose", "permute", "unsqueeze", "squeeze",
     "expand", "expand_as", "contiguous", "flatten", "unflatten", "narrow", "select", "clone", "sum",
     "mean", "exp", "exp2", "log", "log1p", "log2", "log10", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
     "tanh", "sigmoid", "softmax", "log_softmax", "relu", "abs", "neg", "negative", "square", "float",
     "double", "half", "bfloat16", "type_as", "cumsum", "norm", "repeat", "tile", "flip", "roll",
     "diagonal", "tril", "triu", "movedim", "moveaxis", "swapaxes", "swapdims", "reciprocal", "erf",
     "logsumexp", "masked_fill", "gather", "index_select", "take_along_dim", "repeat_interleave",
     "chunk", "split", "unbind", "sinh", "cosh", "asin", "acos", "atan", "erfinv", "softplus", "silu",
     "gelu", "logit", "lgamma", "digamma", "sinc", "frac", "nan_to_num", "clamp", "clip", "clamp_min",
     "clamp_max", "amax", "amin", "prod", "std", "var", "matrix_exp"}
)
# Tensor methods differentiable in the receiver and in their tensor arguments.
_BINARY_METHODS = frozenset(
    {"add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "matmul", "mm", "bmm",
     "mv", "dot", "outer", "pow", "lerp", "addcmul", "addcdiv", "addmm", "baddbmm", "addbmm", "addmv",
     "hypot", "atan2", "xlogy", "where"}
)
# Methods whose positional argument at these positions is an index, a mask or a condition.
_METHOD_SKIPPED_ARGS = {"where": (0,), "masked_fill": (0, 1), "gather": (0, 1), "index_select": (0, 1),
                        "take_along_dim": (0, 1)}
_INTEGER_DTYPES = frozenset({"long", "int", "short", "bool", "uint8", "int8", "int16", "int32", "int64",
                             "byte", "char"})

# torch.<name> / torch.nn.functional.<name> differentiable in every tensor argument, save the
# positions listed (indices, conditions, running statistics).
_FUNCTIONS: dict[str, tuple[int, ...]] = {
    **{name: () for name in (
        "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "matmul", "mm", "bmm",
        "mv", "dot", "outer", "kron", "addmm", "addmv", "baddbmm", "addbmm", "addcmul", "addcdiv",
        "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "einsum", "lerp", "cat", "concat", "concatenate", "stack", "hstack", "vstack",
        "exp", "exp2", "log", "log1p", "log2", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
        "sigmoid", "relu", "gelu", "silu", "softplus", "elu", "leaky_relu", "mish", "softmax",
        "log_softmax", "abs", "neg", "square", "pow", "sum", "mean", "cumsum", "logsumexp", "clone",
        "transpose", "permute", "reshape", "flatten", "squeeze", "unsqueeze", "narrow", "select", "t",
        "movedim", "diagonal", "tril", "triu", "flip", "roll", "tile", "hypot", "atan2", "reciprocal",
        "erf", "tensordot", "chain_matmul", "cdist", "prod", "norm", "amax", "amin", "sinh", "cosh",
        "logit", "frac", "glu", "hardtanh", "celu", "selu", "normalize", "pad", "interpolate",
        "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
        "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "scaled_dot_product_attention",
        "cosine_similarity", "xlogy", "std", "var", "dropout")},
    "where": (0,),
    "gather": (1, 2),
    "index_select": (1, 2),
    "take_along_dim": (1,),
    "masked_fill": (1, 2),
    "clamp": (1, 2),
    "clip": (1, 2),
    "embedding": (0,),
    "layer_norm": (1,),
    "group_norm": (1,),
    "batch_norm": (1, 2),
    "instance_norm": (1, 2),
    "rms_norm": (1,),
}
# Keyword arguments that are differentiated (``F.linear(x, weight=w, bias=b)``).
_TENSOR_KEYWORDS = frozenset({"input", "other", "weight", "bias", "mat1", "mat2", "tensor1", "tensor2",
                              "end", "tensors", "x1", "x2", "query", "key", "value"})
_NAMESPACES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg")


def certain_inputs(model: "FunctionModel") -> dict[int, cst.Return]:
    """Input position -> the first ``return`` of forward whose values (those not marked
    non-differentiable) certainly carry that input, on some path through forward."""
    cached = model.__dict__.get("_certain_inputs")
    if cached is None:
        cached = model.__dict__["_certain_inputs"] = _certain_inputs(model)
    return cached


def _certain_inputs(model: "FunctionModel") -> dict[int, cst.Return]:
    from autograd_lint.analysis.non_differentiable import marked_output_names

    forward = model.forward
    inputs = [p.name for p in model.known_inputs]
    marked = marked_output_names(model)
    if forward is None or not inputs or marked is None:
        return {}
    paths = enumerate_paths(forward.node)
    if paths is None:
        return {}
    evaluator = _Evaluator(model, forward)
    found: dict[int, cst.Return] = {}
    for path in paths:
        if not isinstance(path.ends_with, cst.Return) or path.ends_with.value is None:
            continue
        env = {name: frozenset([name]) for name in inputs if name in {p.name for p in forward.params}}
        for element in path.elements[:-1]:
            evaluator.step(element, env)
        value = path.ends_with.value
        elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        reached: set[str] = set()
        for element in elements:
            if isinstance(element, cst.Name) and element.value in marked:
                continue
            reached |= evaluator.sources(element, env)
        for name in reached:
            position = inputs.index(name)
            found.setdefault(position, path.ends_with)
    return found


class _Evaluator:
    def __init__(self, model: "FunctionModel", method: "Method") -> None:
        self.model = model
        self.method = method
        self.ctx_names = model.ctx_names(method)

    # ---- statements -------------------------------------------------------------------------
    def step(self, element: cst.CSTNode, env: dict[str, Sources]) -> None:
        parent = self.method.parents.get(id(element))
        if isinstance(parent, cst.For) and parent.iter is element:
            self._kill_calls(element, env)
            for name in target_names(parent.target):
                env.pop(name, None)
            return
        if isinstance(parent, cst.WithItem) and parent.item is element:
            self._kill_calls(element, env)
            if parent.asname is not None:
                for name in target_names(parent.asname.name):
                    env.pop(name, None)
            return
        if isinstance(element, cst.Assign):
            value = self.sources(element.value, env)
            self._kill_calls(element.value, env)
            for target in element.targets:
                self._bind(target.target, element.value, value, env)
        elif isinstance(element, cst.AnnAssign):
            if element.value is not None:
                value = self.sources(element.value, env)
                self._kill_calls(element.value, env)
                self._bind(element.target, element.value, value, env)
        elif isinstance(element, cst.AugAssign):
            value = self.sources(element.value, env)
            self._kill_calls(element.value, env)
            target = element.target
            if isinstance(target, cst.Name):
                if isinstance(element.operator, _AUGMENTED):
                    env[target.value] = env.get(target.value, _NONE) | value
                else:
                    env.pop(target.value, None)
            else:
                self._kill_written(target, env)
        elif isinstance(element, cst.Expr):
            self._inplace_call(element.value, env)
            self._kill_calls(element.value, env)
        elif isinstance(element, cst.BaseExpression):
            self._kill_calls(element, env)  # an `if` test or a `while` condition
        elif isinstance(element, (cst.Del,)):
            for name in target_names(element.target):
                env.pop(name, None)

    def _bind(self, target: cst.BaseExpression, value_node: cst.BaseExpression, value: Sources,
              env: dict[str, Sources]) -> None:
        if isinstance(target, cst.Name):
            env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            if isinstance(value_node, (cst.Tuple, cst.List)) and len(value_node.elements) == len(target.elements) \
                    and not any(isinstance(e, cst.StarredElement) for e in value_node.elements):
                values = [self.sources(e.value, env) for e in value_node.elements]
                for element, value_element, element_value in zip(target.elements, value_node.elements, values):
                    self._bind(element.value, value_element.value, element_value, env)
                return
            star = self.method.star_args
            if star is not None and isinstance(value_node, cst.Name) and value_node.value == star:
                inputs = {p.name for p in self.model.known_inputs}
                for element in target.elements:  # `x, w = args`: forward's inputs by position
                    for name in target_names(element.value):
                        if name in inputs and not isinstance(element, cst.StarredElement):
                            env[name] = frozenset([name])
                        else:
                            env.pop(name, None)
                return
            # `a, b = x.chunk(2)`: each part carries x; `a, b = helper(x)`: unknown
            parts = _splits(value_node)
            for element in target.elements:
                for name in target_names(element.value):
                    if parts and not isinstance(element, cst.StarredElement):
                        env[name] = self.sources(parts, env)
                    else:
                        env.pop(name, None)
        else:
            self._kill_written(target, env)  # `out[i] = v`, `obj.attr = v`

    def _kill_written(self, target: cst.BaseExpression, env: dict[str, Sources]) -> None:
        """``out[i] = v`` replaces part of out: what out carries is no longer certain."""
        node = target
        while isinstance(node, (cst.Subscript, cst.Attribute)):
            node = node.value
        if isinstance(node, cst.Name) and node is not target:
            env.pop(node.value, None)

    def _inplace_call(self, node: cst.BaseExpression, env: dict[str, Sources]) -> None:
        """``out.add_(b)``: out now also carries b; ``out.zero_()``/``copy_``: unknown."""
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and isinstance(node.func.value, cst.Name)):
            return
        name, method = node.func.value.value, node.func.attr.value
        if not method.endswith("_") or name not in env:
            return
        if method[:-1] in _BINARY_METHODS:
            env[name] = env[name] | self._arguments(node, method[:-1], env)
        elif method[:-1] not in _RECEIVER_METHODS:
            env.pop(name, None)

    def _kill_calls(self, node: cst.BaseExpression, env: dict[str, Sources]) -> None:
        """A local handed to a call we cannot read may be overwritten by it."""
        stack: list[cst.CSTNode] = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, (cst.Lambda, cst.FunctionDef)):
                continue
            if isinstance(current, cst.Call) and self._function(current) is None and not self._known_method(current):
                for arg in current.args:
                    if isinstance(arg.value, cst.Name):
                        env.pop(arg.value.value, None)
            stack.extend(_children(current))

    # ---- expressions ------------------------------------------------------------------------
    def sources(self, node: Optional[cst.BaseExpression], env: dict[str, Sources]) -> Sources:
        """The inputs ``node`` certainly carries with a non-zero derivative."""
        if node is None:
            return _NONE
        if isinstance(node, cst.Name):
            return env.get(node.value, _NONE)
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, _ARITHMETIC):
                return self.sources(node.left, env) | self.sources(node.right, env)
            return _NONE
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, (cst.Minus, cst.Plus)):
                return self.sources(node.expression, env)
            return _NONE
        if isinstance(node, cst.Subscript):
            return self.sources(node.value, env)  # the selected elements carry the tensor
        if isinstance(node, cst.Attribute):
            if node.attr.value in ("T", "mT", "H", "mH", "real"):
                return self.sources(node.value, env)
            return _NONE
        if isinstance(node, cst.IfExp):
            return self.sources(node.body, env) & self.sources(node.orelse, env)
        if isinstance(node, (cst.Tuple, cst.List)):  # the tensors of torch.cat([...])
            found: Sources = _NONE
            for element in node.elements:
                found = found | self.sources(element.value, env)
            return found
        if isinstance(node, cst.Call):
            return self._call(node, env)
        return _NONE

    def _call(self, node: cst.Call, env: dict[str, Sources]) -> Sources:
        function = self._function(node)
        if function is not None:
            skipped = _FUNCTIONS.get(function)
            if skipped is None:
                return _NONE
            found: Sources = _NONE
            for i, arg in enumerate(a for a in node.args if a.keyword is None):
                if i not in skipped and not arg.star:
                    found = found | self.sources(arg.value, env)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in _TENSOR_KEYWORDS:
                    found = found | self.sources(arg.value, env)
            return found
        func = node.func
        if not isinstance(func, cst.Attribute) or not self._on_tensor_expression(func.value):
            return _NONE
        method = func.attr.value
        receiver = self.sources(func.value, env)
        if method in ("to", "type"):
            return _NONE if any(_integer_dtype(a.value) for a in node.args) else receiver
        if method in _RECEIVER_METHODS:
            return receiver
        if method in _BINARY_METHODS:
            return receiver | self._arguments(node, method, env)
        return _NONE

    def _arguments(self, node: cst.Call, method: str, env: dict[str, Sources]) -> Sources:
        skipped = _METHOD_SKIPPED_ARGS.get(method, ())
        found: Sources = _NONE
        for i, arg in enumerate(a for a in node.args if a.keyword is None):
            if i not in skipped and not arg.star:
                found = found | self.sources(arg.value, env)
        return found

    def _function(self, node: cst.Call) -> Optional[str]:
        """``torch.mm`` / ``F.linear`` -> "mm" / "linear": a torch function we know; None for
        anything else (methods, helpers, kernels)."""
        name = dotted(node.func)
        if name is None or "." not in name or is_ctx_attr(node.func, self.ctx_names):
            return None
        head = name.split(".")[0]
        if head in self.model.judge(self.method).known or head in self.model.judge(self.method).assignments:
            return None  # a method of a local (`x.add(...)`)
        namespace, _, last = self.model.qualify(name).rpartition(".")
        return last if namespace in _NAMESPACES else None

    def _known_method(self, node: cst.Call) -> bool:
        """A tensor method we model: it neither hides nor overwrites its arguments."""
        func = node.func
        if not isinstance(func, cst.Attribute):
            return False
        if is_ctx_attr(func, self.ctx_names):
            return True  # ctx.save_for_backward(...), ctx.mark_dirty(...): ctx only records
        method = func.attr.value
        bare = method[:-1] if method.endswith("_") else method
        return bare in _RECEIVER_METHODS or bare in _BINARY_METHODS or method in (
            "size", "dim", "numel", "to", "type", "item", "new_zeros", "new_ones", "new_empty", "new_full")

    def _on_tensor_expression(self, node: cst.BaseExpression) -> bool:
        """The receiver of a method is not a module or a helper object (``torch``, ``F``, ``np``)."""
        name = dotted(node)
        if name is None:
            return True
        return not self.model.qualify(name).split(".")[0] in ("torch", "numpy", "math", "np")


def _splits(node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """``x.chunk(2)`` / ``x.split(n)`` / ``x.unbind()`` -> ``x``: every part carries it."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in (
            "chunk", "split", "unbind", "tensor_split"):
        return node.func.value
    return None


def _integer_dtype(node: cst.BaseExpression) -> bool:
    name = dotted(node)
    return name is not None and name.rsplit(".", 1)[-1] in _INTEGER_DTYPES



def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    return list(code_children(node))
