"""Where a tensor that forward keeps for backward came from, and what backward does with it.

The rules about ctx attributes (AGL201/AGL207) and saved tensors (AGL302) report an error only
when a concrete harm follows, and the harm depends on where the tensor came from:

- forward's **output** (or a view of it) kept on ctx: ctx -> output -> ``output.grad_fn`` (the
  ctx) is a reference cycle, so the graph stays alive until the cyclic garbage collector runs;
  written in place in backward, it changes a tensor the caller holds;
- a forward **input** (or a view of it): the caller holds it too. Kept on ctx, an in-place change
  after forward silently corrupts the gradient when backward reads its values or returns it a
  gradient; written in place in backward, the caller's tensor changes;
- a **private** tensor that forward made itself (a torch op, arithmetic, a comparison): nobody
  else holds it, so neither happens;
- **unknown**: anything else (a helper's result, a ctx attribute read back): rules stay quiet.

Views are followed through the view methods and basic indexing that ``flow.VIEW_METHODS``
lists, in-place methods (which return their receiver), ``.to``/``.float``-style conversions
(which may return the receiver) and ``torch.<view function>(x, ...)``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable, Optional, Union

import libcst as cst

from autograd_lint.analysis.flow import VIEW_METHODS, is_basic_index
from autograd_lint.analysis.syntax import (
    code_children, constant_index, dotted, is_ctx_attr, is_none, literal_key, positional_args,
)
from autograd_lint.analysis.tensorness import NON_TENSOR_ATTRIBUTES, Tensorness, is_zero_gradient

if TYPE_CHECKING:
    from autograd_lint.analysis.class_model import CtxAttributeSet, FunctionModel, Method


class Origin(enum.Enum):
    INPUT = "input"
    OUTPUT = "output"
    PRIVATE = "private"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Provenance:
    origin: Origin
    position: Optional[int] = None  # the input's position; for OUTPUT the output's, if known
    view: bool = False  # a view or alias of it, not the very object
    detached: bool = False  # an alias that shares only its storage (``.detach()``, ``.data``): no ``_base``
    local: Optional[str] = None  # PRIVATE: the local name that holds it (to match a saved one)

    def same_tensor(self, other: "Provenance") -> bool:
        """Both certainly refer to the same tensor (its storage)."""
        if self.origin is not other.origin or self.origin is Origin.UNKNOWN:
            return False
        if self.origin is Origin.PRIVATE:
            return self.local is not None and self.local == other.local
        return self.position == other.position


UNKNOWN = Provenance(Origin.UNKNOWN)


@dataclass(frozen=True)
class ReturnedInput:
    """A value forward returns that is one of its inputs (``view`` False) or a view of one."""

    ret: cst.Return
    index: int  # the output's position in the returned tuple (0 for a bare value)
    value: cst.BaseExpression
    position: int  # the input's position
    view: bool

# Conversions that return the receiver itself when nothing changes (same dtype and device).
_MAY_ALIAS_METHODS = frozenset(
    {"to", "type_as", "float", "double", "half", "bfloat16", "cpu", "cuda", "long", "int", "bool",
     "short", "byte", "char", "requires_grad_", "as_subclass", "view_as_real", "view_as_complex"}
)
# torch.<name>(x, ...) functions that return a view of their first argument.
_VIEW_FUNCTIONS = frozenset(
    {"reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "permute", "narrow",
     "select", "t", "detach", "as_strided", "diagonal", "movedim", "swapaxes", "swapdims",
     "view_as_real", "view_as_complex", "real", "imag", "broadcast_to"}
)
# Views that always share their base's storage and keep it as ``_base``, whatever the strides
# (``reshape``/``contiguous``/``flatten`` and the dtype conversions alias only sometimes;
# ``detach``/``.data`` share storage without a ``_base``): what AGL307 calls "a view of the input".
CERTAIN_VIEW_METHODS = frozenset(
    {"view", "view_as", "t", "transpose", "permute", "unsqueeze", "squeeze", "expand", "expand_as",
     "narrow", "select", "diagonal", "movedim", "moveaxis", "swapaxes", "swapdims", "unfold", "as_strided"}
)
_CERTAIN_VIEW_FUNCTIONS = frozenset(
    {"transpose", "permute", "unsqueeze", "squeeze", "narrow", "select", "t", "diagonal", "movedim",
     "moveaxis", "swapaxes", "swapdims", "as_strided", "broadcast_to"}
)
# Reading these of a tensor is reading its metadata, not its values.
METADATA_ATTRIBUTES = NON_TENSOR_ATTRIBUTES - {"grad_fn", "_version"}
METADATA_METHODS = frozenset(
    {"size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "element_size",
     "get_device", "is_contiguous", "is_floating_point", "is_complex", "is_signed", "type", "dim_order",
     # a new tensor like this one: its dtype and device, not its values
     "new_zeros", "new_ones", "new_empty", "new_full"}
)
# torch.zeros_like(x) and the like read x's shape, dtype and device, not its values.
_LIKE_FACTORIES = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
                             "randint_like"})
# Calls whose `index` argument (second positional, or `index=`) is an index tensor.
_INDEXING_CALLS = frozenset(
    {"index_select", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
     "index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_", "take",
     "take_along_dim", "embedding", "index_put", "index_put_"}
)
_INDEX_CONVERSIONS = frozenset({"long", "int", "bool", "short", "byte"})
# torch.<name>(...) and tensor methods whose result is an integer or bool tensor.
_INTEGER_RESULTS = frozenset(
    {"argmax", "argmin", "argsort", "argwhere", "nonzero", "bucketize", "searchsorted", "isnan", "isinf",
     "isfinite", "isposinf", "isneginf", "isclose", "signbit", "eq", "ne", "lt", "le", "gt", "ge", "greater",
     "greater_equal", "less", "less_equal", "not_equal", "logical_and", "logical_or", "logical_not",
     "logical_xor"}
)
_INDEX_DTYPES = re.compile(r"^torch\.(u?int(8|16|32|64)|long|int|short|bool)$")
_INDEX_ANNOTATION = re.compile(r"\b(Long|Int|Bool|Byte|Short)Tensor\b")
# Names real code gives integer and boolean index tensors (flash-attn's cu_seqlens, PyG's index).
_INDEX_NAME = re.compile(r"^(cu_seqlens\w*|(\w+_)?(seqlens?|idx|idxs|index|indices|ids|perm))$")


class Reads(enum.IntEnum):
    """How backward uses a tensor, ordered: the strongest use wins."""

    NONE = 0
    METADATA = 1  # only .shape / .dtype / .device / .size() / .dim() ...
    VALUES = 2


class ProvenanceModel:
    """Provenance facts of one Function class (built lazily by ``FunctionModel.provenance``)."""

    def __init__(self, model: "FunctionModel") -> None:
        self.model = model
        self._returned: dict[str, Optional[set[str]]] = {}
        self._returned_attributes: Optional[dict[str, Provenance]] = None

    # ---- provenance of expressions in forward / setup_context ------------------------------
    def of(self, method: "Method", node: Optional[cst.BaseExpression],
           _visiting: frozenset[str] = frozenset()) -> Provenance:
        """Where the tensor ``node`` (an expression of forward or setup_context) came from."""
        if node is None:
            return UNKNOWN
        if isinstance(node, cst.Name):
            return self._name(method, node.value, _visiting)
        if method.name == "setup_context":
            position = constant_index(node)
            if position is not None and isinstance(node, cst.Subscript):
                if self._is_param(method, node.value, 1):
                    return Provenance(Origin.INPUT, position)
                if self._is_param(method, node.value, 2):
                    return Provenance(Origin.OUTPUT, position)
        base = _aliased(node, self.model.qualify)
        if base is not None:
            found = self.of(method, base, _visiting)
            if found.origin in (Origin.INPUT, Origin.OUTPUT):
                return Provenance(found.origin, found.position, view=True,
                                  detached=found.detached or _detaches(node, self.model.qualify))
            return Provenance(found.origin, found.position, found.view, found.local)
        if self._is_fresh(method, node):
            return Provenance(Origin.PRIVATE)
        return UNKNOWN

    def _name(self, method: "Method", name: str, visiting: frozenset[str]) -> Provenance:
        model = self.model
        inputs = [p.name for p in model.known_inputs]
        if method.name == "forward" and name in self._returned_names(method):
            # An output marked non-differentiable, or of an integer or bool dtype, gets no
            # grad_fn: no cycle, only shared storage.
            no_grad_fn = name in self._non_differentiable_names() or self._integer_local(method, name)
            return Provenance(Origin.OUTPUT, self._output_position(method, name), detached=no_grad_fn)
        if method.name == "setup_context":
            params = [p.name for p in method.params]
            if len(params) >= 3 and name == params[2]:
                return Provenance(Origin.OUTPUT, 0 if model.output_count == 1 else None)
            unpacked = self._unpacked_output(method, name)
            if unpacked is not None:
                return unpacked
            if name in model.setup_context_inputs and name not in visiting:
                source = model.setup_context_inputs[name]
                return Provenance(Origin.INPUT, inputs.index(source)) if source in inputs else UNKNOWN
        is_input = method.name == "forward" and name in inputs
        if name in visiting:
            # `x = x.contiguous()`: the x on the right is the value before, the input's if any.
            return Provenance(Origin.INPUT, inputs.index(name)) if is_input else UNKNOWN
        bindings = model.judge(method).assignments.get(name, [])
        if is_input and name not in {p.name for p in method.params} and len(bindings) == 1:
            return Provenance(Origin.INPUT, inputs.index(name))  # `x, w = args`: that binding is the input
        found: list[Provenance] = [Provenance(Origin.INPUT, inputs.index(name))] if is_input else []
        for value in bindings:
            if not isinstance(value, cst.BaseExpression):
                return UNKNOWN
            found.append(self.of(method, value, visiting | {name}))
        if not found:
            return UNKNOWN
        first = found[0]
        if all(f.origin is first.origin and f.position == first.position for f in found):
            if first.origin is Origin.PRIVATE:
                return Provenance(Origin.PRIVATE, local=name if len(found) == 1 else None)
            return Provenance(first.origin, first.position, any(f.view for f in found),
                              any(f.detached for f in found))
        return UNKNOWN

    def _returned_names(self, forward: "Method") -> set[str]:
        """Names forward returns, as themselves or as the base of a returned view."""
        key = forward.name
        if key not in self._returned:
            names: set[str] = set()
            for ret in forward.returns:
                value = ret.value
                elements = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
                for element in elements:
                    while element is not None and not isinstance(element, cst.Name):
                        element = _aliased(element, self.model.qualify)
                    if element is not None:
                        names.add(element.value)
            self._returned[key] = names
        return self._returned[key] or set()

    def _non_differentiable_names(self) -> set[str]:
        names: set[str] = set()
        for method in self.model.forward_methods:
            ctx_names = self.model.ctx_names(method)
            for call in method.nodes_of(cst.Call):
                if is_ctx_attr(call.func, ctx_names, "mark_non_differentiable"):
                    names |= {a.value.value for a in call.args if isinstance(a.value, cst.Name)}
        return names

    def _non_differentiable_attributes(self) -> set[str]:
        """ctx attributes passed to ``ctx.mark_non_differentiable(ctx.idx)``."""
        attrs: set[str] = set()
        for method in self.model.forward_methods:
            ctx_names = self.model.ctx_names(method)
            for call in method.nodes_of(cst.Call):
                if is_ctx_attr(call.func, ctx_names, "mark_non_differentiable"):
                    attrs |= {a.value.attr.value for a in call.args if is_ctx_attr(a.value, ctx_names)}
        return attrs

    def _integer_local(self, method: "Method", name: str) -> bool:
        """Every binding of the local ``name`` is certainly an integer or bool tensor."""
        bindings = self.model.judge(method).assignments.get(name, [])
        return bool(bindings) and name not in {p.name for p in method.params} and all(
            isinstance(b, cst.BaseExpression) and self._certainly_integer(method, b) for b in bindings)

    def _certainly_integer(self, method: "Method", node: Optional[cst.BaseExpression]) -> bool:
        """``node`` is certainly a tensor of an integer or bool dtype, which never requires grad:
        as forward's output it gets no grad_fn. A comparison of tensors, ``torch.argmax(...)`` and
        the other index producers, ``.long()``/``.bool()``/..., ``.to(torch.long)``, a
        ``dtype=torch.long`` keyword."""
        if node is None or self.model.judge(method)(node) is not Tensorness.TENSOR:
            return False
        if isinstance(node, cst.Comparison):
            return all(isinstance(c.operator, (cst.LessThan, cst.GreaterThan, cst.LessThanEqual,
                                               cst.GreaterThanEqual, cst.Equal, cst.NotEqual))
                       for c in node.comparisons)
        if not isinstance(node, cst.Call):
            return False
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "dtype":
                return bool(_INDEX_DTYPES.match(self.model.qualify(dotted(arg.value) or "")))
        name = dotted(node.func)
        if name is not None and self.model.qualify(name).startswith("torch."):
            return self.model.qualify(name).rpartition(".")[2] in _INTEGER_RESULTS
        if isinstance(node.func, cst.Attribute):
            method_name = node.func.attr.value
            if method_name in _INDEX_CONVERSIONS or method_name in _INTEGER_RESULTS:
                return True
            if method_name == "to":
                return any(_INDEX_DTYPES.match(self.model.qualify(dotted(a.value) or ""))
                           for a in node.args if a.keyword is None)
        return False

    def _output_position(self, forward: "Method", name: str) -> Optional[int]:
        positions = set()
        for ret in forward.returns:
            value = ret.value
            if isinstance(value, (cst.Tuple, cst.List)):
                positions |= {i for i, e in enumerate(value.elements) if isinstance(e.value, cst.Name)
                              and e.value.value == name}
            elif isinstance(value, cst.Name) and value.value == name:
                positions.add(0)
        return positions.pop() if len(positions) == 1 else None

    def _unpacked_output(self, setup: "Method", name: str) -> Optional[Provenance]:
        """``out, lse = output`` in setup_context: each name is one of forward's outputs."""
        if len(setup.params) < 3:
            return None
        output = setup.params[2].name
        for node in setup.nodes_of(cst.Assign):
            if isinstance(node.value, cst.Name) and node.value.value == output:
                for target in node.targets:
                    if isinstance(target.target, (cst.Tuple, cst.List)):
                        for i, element in enumerate(target.target.elements):
                            if isinstance(element.value, cst.Name) and element.value.value == name:
                                return Provenance(Origin.OUTPUT, i)
        return None

    @staticmethod
    def _is_param(method: "Method", node: cst.BaseExpression, index: int) -> bool:
        return (isinstance(node, cst.Name) and len(method.params) > index
                and node.value == method.params[index].name)

    def _is_fresh(self, method: "Method", node: cst.BaseExpression) -> bool:
        """A new tensor forward made: a torch op, a tensor method, arithmetic or a comparison."""
        judge = self.model.judge(method)
        if judge(node) is not Tensorness.TENSOR:
            return False
        if isinstance(node, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
            return True
        if isinstance(node, cst.Call):
            name = dotted(node.func)
            if name is not None and self.model.qualify(name).startswith("torch."):
                return True
            return isinstance(node.func, cst.Attribute) and judge(node.func.value) is Tensorness.TENSOR
        if isinstance(node, cst.Subscript):
            return True  # advanced indexing (basic indexing is a view, followed above)
        return False

    # ---- forward's outputs that are its inputs ---------------------------------------------
    def returned_inputs(self) -> list["ReturnedInput"]:
        """Each value forward returns that is certainly one of its inputs as it came in, or a view
        that always keeps that input as its ``_base`` (``CERTAIN_VIEW_METHODS``, basic indexing).
        PyTorch then hands the caller a view of the input (docs/runtime-mechanisms.md, F17)."""
        forward = self.model.forward
        if forward is None:
            return []
        found = []
        for ret in forward.returns:
            value = ret.value
            elements = [e.value for e in value.elements if not isinstance(e, cst.StarredElement)] \
                if isinstance(value, cst.Tuple) else [value]
            if isinstance(value, cst.Tuple) and any(isinstance(e, cst.StarredElement) for e in value.elements):
                continue  # positions unknown
            for index, element in enumerate(elements):
                alias = self._input_alias(forward, element, frozenset()) if element is not None else None
                if alias is not None:
                    found.append(ReturnedInput(ret, index, element, alias[0], alias[1]))
        return found

    def _input_alias(self, forward: "Method", node: cst.BaseExpression,
                     visiting: frozenset[str]) -> Optional[tuple[int, bool]]:
        """(input position, through a view) when ``node`` is certainly that input or a certain
        view of it; None otherwise."""
        if isinstance(node, cst.Name):
            inputs = [p.name for p in self.model.known_inputs]
            name = node.value
            is_input = name in inputs
            if name in visiting:
                return (inputs.index(name), False) if is_input else None
            bindings = self.model.judge(forward).assignments.get(name, [])
            if is_input and name not in {p.name for p in forward.params} and len(bindings) == 1:
                return inputs.index(name), False  # `x, w = args`: that binding is the input
            found = [(inputs.index(name), False)] if is_input else []
            for value in bindings:
                if not isinstance(value, cst.BaseExpression):
                    return None
                alias = self._input_alias(forward, value, visiting | {name})
                if alias is None:
                    return None
                found.append(alias)
            if not found or any(position != found[0][0] for position, _ in found):
                return None
            return found[0][0], any(view for _, view in found)
        base = _certain_view_base(node, self.model.qualify)
        if base is None:
            return None
        alias = self._input_alias(forward, base, visiting)
        return (alias[0], True) if alias is not None else None

    def input_alias(self, node: cst.BaseExpression) -> Optional[tuple[int, bool]]:
        """(input position, through a view) when ``node``, an expression of forward, is certainly
        one of forward's inputs as it came in or a view of one; None otherwise."""
        forward = self.model.forward
        return None if forward is None else self._input_alias(forward, node, frozenset())

    # ---- ctx attributes and saved tensors ----------------------------------------------------
    def ctx_attribute(self, attr: str) -> Provenance:
        """Provenance of ``ctx.<attr>``: the same on every assignment, else unknown."""
        sets = [s for s in self.model.ctx_attribute_sets if s.attr == attr]
        found = [self.held_by(s) for s in sets]
        if not found or any(f != found[0] for f in found):
            return UNKNOWN
        return found[0]

    def held_by(self, attr_set: "CtxAttributeSet") -> Provenance:
        """Where the tensor that this assignment puts on ctx came from. Besides the provenance of
        the value written (``of``), the attribute itself may be forward's output: forward returns
        it (``ctx.out = x.clone(); return ctx.out``), so whatever it holds is the output."""
        if attr_set.index is None:
            returned = self.returned_attributes().get(attr_set.attr)
            sets = [s for s in self.model.ctx_attribute_sets if s.attr == attr_set.attr]
            if returned is not None and sets == [attr_set]:  # set once: that value is the one returned
                if (attr_set.attr in self._non_differentiable_attributes()
                        or self._certainly_integer(attr_set.method, attr_set.value)):
                    return replace(returned, detached=True)  # no grad_fn, so no cycle
                return returned
        statement = attr_set.statement
        if isinstance(statement, cst.Assign) and len(statement.targets) > 1 and attr_set.index is None:
            # `ctx.out = out = torch.exp(x)`: the value is also the local `out`, maybe returned
            for target in statement.targets:
                if isinstance(target.target, cst.Name):
                    found = self.of(attr_set.method, target.target)
                    if found.origin is Origin.OUTPUT:
                        return found
        return self.of(attr_set.method, attr_set.value)

    def returned_attributes(self) -> dict[str, Provenance]:
        """The ctx attributes that a legacy forward returns as they are, each as the output it is
        (its position in the returned tuple, when every return agrees): ``return ctx.out``,
        ``return ctx.a, ctx.b``, or a local bound only to one (``y = ctx.out; return y``).
        Returning a view of the attribute (``return ctx.base.view(-1)``) does not count: the
        output is then a new tensor whose ``_base`` is the attribute, and no cycle forms
        (docs/runtime-mechanisms.md, F19)."""
        if self._returned_attributes is None:
            self._returned_attributes = self._find_returned_attributes()
        return self._returned_attributes

    def _find_returned_attributes(self) -> dict[str, Provenance]:
        forward = self.model.forward
        if forward is None or forward.name != "forward":
            return {}
        ctx_names = self.model.ctx_names(forward)
        if not ctx_names:
            return {}  # new style: forward has no ctx
        assignments = self.model.judge(forward).assignments
        params = {p.name for p in forward.params}
        positions: dict[str, set[Optional[int]]] = {}
        for ret in forward.returns:
            value = ret.value
            if isinstance(value, (cst.Tuple, cst.List)):
                if any(isinstance(e, cst.StarredElement) for e in value.elements):
                    elements = [(None, e.value) for e in value.elements]  # positions unknown
                else:
                    elements = [(i, e.value) for i, e in enumerate(value.elements)]
            elif value is not None:
                elements = [(0, value)]
            else:
                continue
            for position, element in elements:
                if isinstance(element, cst.Name) and element.value not in params:
                    bound = assignments.get(element.value, [])
                    if len(bound) == 1 and isinstance(bound[0], cst.BaseExpression):
                        element = bound[0]  # `y = ctx.out; return y`
                if is_ctx_attr(element, ctx_names):
                    positions.setdefault(element.attr.value, set()).add(position)
        return {attr: Provenance(Origin.OUTPUT, found.pop() if len(found) == 1 else None)
                for attr, found in positions.items()}

    def saved_position(self, position: int) -> Provenance:
        """Provenance of the tensor ``save_for_backward`` keeps at ``position``."""
        found = []
        for call in self.model.save_calls:
            if call.args is None or position >= len(call.args):
                return UNKNOWN
            found.append(self.of(call.method, call.args[position]))
        if not found or any(f != found[0] for f in found):
            return UNKNOWN
        return found[0]

    def is_saved(self, method: "Method", value: Optional[cst.BaseExpression]) -> bool:
        """``value`` is (a view of) a tensor that save_for_backward also keeps: the saved copy is
        checked for in-place changes and seen by saved-tensor hooks."""
        if value is None:
            return False
        mine = self.of(method, value)
        root = _root_name(value, self.model.qualify)
        for call in self.model.save_calls:
            for arg in call.args or []:
                if root is not None and call.method is method and _root_name(arg, self.model.qualify) == root:
                    return True
                if mine.same_tensor(self.of(call.method, arg)):
                    return True
        return False

    def keeps_input(self, position: int) -> bool:
        """forward may keep input ``position`` (or a view of it) for backward: in
        save_for_backward or on ctx. Whatever cannot be read counts as kept: a starred save, a
        ctx attribute set where we cannot see its value, ctx handed to other code, a tensor of
        unknown origin."""
        model = self.model
        if model.ctx_escapes:
            return True

        returned_at = {r.index for r in self.returned_inputs() if r.position == position}

        def may_be_it(method: "Method", value: cst.BaseExpression) -> bool:
            if method.name == "forward":
                alias = self._input_alias(method, value, frozenset())
                if alias is not None:
                    return alias[0] == position
            found = self.of(method, value)  # an input forward returns is an output here
            return (found.origin is Origin.UNKNOWN
                    or (found.origin is Origin.INPUT and found.position == position)
                    or (found.origin is Origin.OUTPUT and (found.position is None or found.position in returned_at)))

        for call in model.save_calls:
            if call.args is None or any(may_be_it(call.method, arg) for arg in call.args):
                return True
        for attr_set in model.ctx_attribute_sets:
            value = attr_set.value
            if value is None:
                return True
            if attr_set.index is None and isinstance(value, (cst.Tuple, cst.List, cst.Dict)):
                if any(isinstance(e, (cst.StarredElement, cst.StarredDictElement)) for e in value.elements):
                    return True  # `(*xs, y)`: what the starred part holds is not listed
                continue  # a container literal: its elements are listed one by one
            if model.judge(attr_set.method)(value) is Tensorness.NOT_TENSOR:
                continue
            if may_be_it(attr_set.method, value):
                return True
        return False

    # ---- inputs ---------------------------------------------------------------------------
    def input_gets_gradient(self, position: int, zeros_are_none: bool = False) -> bool:
        """backward may return a gradient for input ``position``: it is not ``None`` there on
        every return (a return we cannot read counts as a gradient). With ``zeros_are_none``, a
        zero tensor made in the return itself (``torch.zeros_like(x)``: an empty input's) counts
        as none too."""
        backward = self.model.backward
        if backward is None or not backward.returns:
            return True
        judge = self.model.judge(backward)
        for ret in backward.returns:
            value = ret.value
            if value is None or is_none(value):
                continue
            if not isinstance(value, cst.Tuple) or any(isinstance(e, cst.StarredElement) for e in value.elements):
                return True
            if position >= len(value.elements):
                continue  # a shorter return: the call that reaches it passed fewer inputs
            element = value.elements[position].value
            if _certainly_none(element, judge.assignments):
                continue
            # Only a zero tensor made right in the return: a name bound to `zeros_like(...)` is
            # most often a buffer a kernel then fills (`ext.backward(grad, ..., grad_input)`).
            if not (zeros_are_none and isinstance(element, cst.Call) and is_zero_gradient(element)):
                return True
        return False

    def gradient_inputs(self) -> Optional[int]:
        """How many inputs backward may return a gradient for (None when the inputs are unknown)."""
        inputs = self.model.inputs
        if inputs is None:
            return None
        return sum(1 for i in range(len(inputs)) if self.input_gets_gradient(i))

    def is_index_tensor(self, position: int) -> bool:
        """Input ``position`` looks like an integer or boolean index tensor: annotated
        ``LongTensor``/``BoolTensor``, named like ``cu_seqlens``/``indices``, converted with
        ``.long()``/``.int()``/``.bool()`` or to an integer dtype in forward, or used only as an
        index. A heuristic, so callers use it only to lower a severity."""
        inputs = self.model.known_inputs
        if position >= len(inputs):
            return False
        param = inputs[position]
        if param.annotation and _INDEX_ANNOTATION.search(param.annotation):
            return True
        if _INDEX_NAME.match(param.name):
            return True
        forward = self.model.forward
        if forward is None:
            return False
        parents = _parents(forward)
        uses = [n for n in _name_uses(forward, param.name, parents)]
        for use, parent in uses:
            if isinstance(parent, cst.Attribute) and parent.attr.value in _INDEX_CONVERSIONS:
                return True
            if isinstance(parent, cst.Attribute) and parent.attr.value == "dtype":
                # `assert x.dtype == torch.int` (mmcv's batch counts)
                comparison = parents.get(id(parent))
                if isinstance(comparison, cst.Comparison) and any(
                    isinstance(target.operator, cst.Equal)
                    and _INDEX_DTYPES.match(self.model.qualify(dotted(target.comparator) or ""))
                    for target in comparison.comparisons
                ):
                    return True
            if isinstance(parent, cst.Attribute) and parent.attr.value == "to":
                call = _call_of(forward, parent)
                if call is not None and any(_INDEX_DTYPES.match(self.model.qualify(dotted(a.value) or ""))
                                            for a in call.args):
                    return True
        value_uses = [(u, p) for u, p in uses if _use_kind(u, p, forward) is not _UseKind.METADATA]
        return bool(value_uses) and all(_use_kind(u, p, forward) is _UseKind.INDEX for u, p in value_uses)

    # ---- forward's outputs ----------------------------------------------------------------
    def outputs_read_input_values(self) -> bool:
        """Whether what forward returns may depend on an input's values. False only when every
        statement that reads an input (or a local made from one) by value is certainly not on the
        way to a return: forward then reads its inputs only for shape, dtype or device
        (``torch.ones(1).expand(x.size())``), its outputs are constant in the inputs, and the true
        gradient is zero. Conservative: a statement that reads a tainted value taints every local
        it names (a kernel may write into any argument), and a branch or loop on one counts."""
        forward = self.model.forward
        if forward is None or self.model.inputs is None:
            return True
        parents = _parents(forward)
        local = {p.name for p in forward.params} | set(self.model.judge(forward).assignments)
        units = [node for node in forward.nodes
                 if isinstance(node, cst.BaseSmallStatement) or isinstance(node, (cst.If, cst.While, cst.For))]
        tainted = {p.name for p in self.model.known_inputs}
        changed = True
        while changed:
            changed = False
            for unit in units:
                names = _unit_names(unit)
                if not any(n.value in tainted and _use_kind(n, parents.get(id(n)), forward, parents)
                           is not _UseKind.METADATA for n in names):
                    continue
                if isinstance(unit, (cst.Return, cst.If, cst.While, cst.For)):
                    return True
                grown = {n.value for n in names if n.value in local} - tainted
                if grown:
                    tainted |= grown
                    changed = True
        return False

    # ---- backward's reads -----------------------------------------------------------------
    def backward_reads(self, attr: str, index: Union[int, str, None] = None) -> Reads:
        """How backward (and jvp/vjp) read ``ctx.<attr>``: not at all, only its metadata, or its
        values. ctx handed to other code counts as reading values. With ``index`` (one element of
        a container on ctx, as CtxAttributeSet.index), how that element is read: through
        ``ctx.<attr>[index]`` or its target in ``a, b, c = ctx.<attr>``; any other read of the
        container counts as reading it."""
        result = Reads.NONE
        for name in ("backward", "jvp", "vjp"):
            method = self.model.method(name)
            if method is None:
                continue
            ctx_names = self.model.ctx_names(method)
            parents = _parents(method)
            for node in method.nodes_of(cst.Call):
                if any(isinstance(a.value, cst.Name) and a.value.value in ctx_names for a in node.args):
                    return Reads.VALUES
            for node in method.nodes_of(cst.Attribute):
                if not is_ctx_attr(node, ctx_names, attr):
                    continue
                parent = parents.get(id(node))
                if index is not None:
                    node, parent = _element_read(node, parent, index, parents)
                    if node is None:
                        continue  # another element
                result = max(result, self._read_kind(method, node, parent, parents))
                if result is Reads.VALUES:
                    return result
        return result

    def _read_kind(self, method: "Method", node: cst.CSTNode, parent: Optional[cst.CSTNode],
                   parents: dict[int, cst.CSTNode]) -> Reads:
        if isinstance(node, cst.Name):
            return self._local_reads(method, node.value, parents)  # an unpacked element
        kind = _use_kind(node, parent, method, parents)
        if kind is _UseKind.METADATA:
            return Reads.METADATA
        if (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            # `x = ctx.x`: how backward uses x
            return self._local_reads(method, parent.targets[0].target.value, parents)
        return Reads.VALUES

    @staticmethod
    def _local_reads(method: "Method", local: str, parents: dict[int, cst.CSTNode]) -> Reads:
        result = Reads.NONE
        for use, use_parent in _name_uses(method, local, parents):
            result = max(result, Reads.METADATA if _use_kind(use, use_parent, method, parents)
                         is _UseKind.METADATA else Reads.VALUES)
        return result


def _element_read(node: cst.CSTNode, parent: Optional[cst.CSTNode], index: Union[int, str],
                  parents: dict[int, cst.CSTNode]) -> tuple[Optional[cst.CSTNode], Optional[cst.CSTNode]]:
    """Where element ``index`` of the container ``node`` (a read of ``ctx.<attr>``) is read:
    ``(the element read, its parent)``; ``(None, None)`` when this read takes another element;
    ``(node, parent)`` (the whole container) when it cannot tell."""
    if isinstance(parent, cst.Subscript) and parent.value is node and len(parent.slice) == 1:
        element = parent.slice[0].slice
        if isinstance(element, cst.Index):
            key = literal_key(element.value)
            if key is None or (isinstance(key, int) and isinstance(index, int) and (key < 0) != (index < 0)):
                return node, parent  # not a literal, or counted from the other end
            if key != index:
                return None, None
            return parent, parents.get(id(parent))
    if (isinstance(index, int) and index >= 0 and isinstance(parent, cst.Assign)
            and len(parent.targets) == 1 and isinstance(parent.targets[0].target, (cst.Tuple, cst.List))):
        elements = parent.targets[0].target.elements
        if all(isinstance(e, cst.Element) for e in elements) and index < len(elements):
            target = elements[index].value
            if isinstance(target, cst.Name):
                return target, parent  # read through the local it is unpacked to
    return node, parent


class _UseKind(enum.Enum):
    METADATA = "metadata"
    INDEX = "index"
    OTHER = "other"


def _use_kind(node: cst.CSTNode, parent: Optional[cst.CSTNode], method: "Method",
              parents: Optional[dict[int, cst.CSTNode]] = None) -> _UseKind:
    if isinstance(parent, cst.Attribute) and parent.value is node:
        if parent.attr.value in METADATA_ATTRIBUTES:
            return _UseKind.METADATA
        if parent.attr.value in METADATA_METHODS and _call_of(method, parent, parents) is not None:
            return _UseKind.METADATA
    if isinstance(parent, cst.Call) and dotted(parent.func) == "len":
        return _UseKind.METADATA
    if (isinstance(parent, cst.Comparison) and parent.left is node and all(
            isinstance(c.operator, (cst.Is, cst.IsNot)) and is_none(c.comparator) for c in parent.comparisons)):
        return _UseKind.METADATA  # `x is None`: whether it is there, not what it holds
    if isinstance(parent, cst.Index):
        return _UseKind.INDEX  # x[idx]
    if isinstance(parent, cst.Arg):
        call = (parents or _parents(method)).get(id(parent))
        if isinstance(call, cst.Call) and _is_index_argument(call, parent):
            return _UseKind.INDEX
        if isinstance(call, cst.Call) and _is_like_source(call, parent):
            return _UseKind.METADATA
    return _UseKind.OTHER


def _is_like_source(call: cst.Call, arg: cst.Arg) -> bool:
    """``arg`` is the tensor that ``torch.zeros_like(arg)`` (or another ``*_like`` factory) copies
    the shape, dtype and device of."""
    name = dotted(call.func) or ""
    if not name.startswith("torch.") or name.rsplit(".", 1)[-1] not in _LIKE_FACTORIES:
        return False
    positional = positional_args(call)
    return (bool(positional) and positional[0] is arg) or (arg.keyword is not None and arg.keyword.value == "input")


def _is_index_argument(call: cst.Call, arg: cst.Arg) -> bool:
    """``arg`` is the index of an indexing call: ``x.gather(dim, idx)``, ``torch.gather(x, dim,
    idx)``, ``F.embedding(idx, weight)``, or ``index=idx``."""
    name = (dotted(call.func) or "").rsplit(".", 1)[-1] if dotted(call.func) else (
        call.func.attr.value if isinstance(call.func, cst.Attribute) else "")
    if name not in _INDEXING_CALLS:
        return False
    if arg.keyword is not None:
        return arg.keyword.value == "index"
    positional = positional_args(call)
    at = next((i for i, a in enumerate(positional) if a is arg), None)
    if at is None:
        return False
    if name == "embedding":
        return at == 0
    if name in ("take", "take_along_dim"):
        return at == (0 if _is_method_call(call) else 1)
    return at == (1 if _is_method_call(call) else 2)


def _is_method_call(call: cst.Call) -> bool:
    """``x.gather(...)`` on a tensor rather than ``torch.gather(...)``/``F.embedding(...)``."""
    name = dotted(call.func) or ""
    return isinstance(call.func, cst.Attribute) and not name.startswith(("torch.", "F.", "nn.functional."))


def _certainly_none(value: cst.BaseExpression, assignments: dict) -> bool:
    if is_none(value):
        return True
    if isinstance(value, cst.Name):
        bound = assignments.get(value.value)
        return bool(bound) and all(isinstance(b, cst.BaseExpression) and is_none(b) for b in bound)
    return False


def _aliased(node: cst.BaseExpression, qualify) -> Optional[cst.BaseExpression]:
    """The tensor ``node`` is a view or alias of, or None when it is not one."""
    if isinstance(node, cst.Attribute) and node.attr.value in VIEW_METHODS:
        return node.value
    if isinstance(node, cst.Subscript) and is_basic_index(node):
        return node.value
    if isinstance(node, cst.Call):
        func = node.func
        name = dotted(func)
        if name is not None and "." in name:
            qualified = qualify(name)
            namespace, _, last = qualified.rpartition(".")
            if namespace == "torch" and last in _VIEW_FUNCTIONS:
                args = positional_args(node)
                return args[0].value if args else None
            if namespace == "torch":
                return None
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in VIEW_METHODS or method in _MAY_ALIAS_METHODS:
                return func.value
            if method.endswith("_") and not method.startswith("_"):
                return func.value  # in-place methods return their receiver
    return None


def _certain_view_base(node: cst.BaseExpression, qualify) -> Optional[cst.BaseExpression]:
    """The tensor ``node`` is always a view of (``x.view(...)``, ``x.T``, ``x[0]``,
    ``torch.transpose(x, 0, 1)``), or None."""
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT"):
        return node.value
    if isinstance(node, cst.Subscript) and is_basic_index(node):
        return node.value
    if isinstance(node, cst.Call):
        func = node.func
        name = dotted(func)
        if name is not None and "." in name and qualify(name).startswith("torch."):
            namespace, _, last = qualify(name).rpartition(".")
            if namespace == "torch" and last in _CERTAIN_VIEW_FUNCTIONS:
                args = positional_args(node)
                return args[0].value if args else None
            return None
        if isinstance(func, cst.Attribute) and func.attr.value in CERTAIN_VIEW_METHODS:
            return func.value
    return None


def _detaches(node: cst.BaseExpression, qualify) -> bool:
    """``x.detach()``, ``x.data``, ``torch.detach(x)``: the result shares x's storage but does not
    keep x as its ``_base``."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "data"
    if isinstance(node, cst.Call):
        name = dotted(node.func)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "detach":
            return name is None or not qualify(name).startswith("torch.") or qualify(name) == "torch.detach"
    return False


def _root_name(node: cst.BaseExpression, qualify) -> Optional[str]:
    while node is not None and not isinstance(node, cst.Name):
        node = _aliased(node, qualify)
    return node.value if node is not None else None


def _parents(method: "Method") -> dict[int, cst.CSTNode]:
    """id(node) -> its parent, over the method's own nodes."""
    return method.parents


def _call_of(method: "Method", func: cst.Attribute,
             parents: Optional[dict[int, cst.CSTNode]] = None) -> Optional[cst.Call]:
    parent = (parents or _parents(method)).get(id(func))
    return parent if isinstance(parent, cst.Call) and parent.func is func else None


def _name_uses(method: "Method", name: str,
               parents: Optional[dict[int, cst.CSTNode]] = None) -> Iterable[tuple[cst.Name, Optional[cst.CSTNode]]]:
    """Each read of the local ``name`` in ``method`` with its parent node (targets left out)."""
    parents = parents or _parents(method)
    targets = set()
    for node in method.nodes_of(cst.AssignTarget, cst.AnnAssign, cst.AugAssign):
        target = node.target
        stack = [target]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Name):
                targets.add(id(current))
            elif isinstance(current, (cst.Tuple, cst.List)):
                stack.extend(e.value for e in current.elements)
            elif isinstance(current, cst.StarredElement):
                stack.append(current.value)
    for node in method.nodes_of(cst.Name):
        if node.value != name or id(node) in targets:
            continue
        parent = parents.get(id(node))
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue  # `a.name`: an attribute, not the local
        if isinstance(parent, (cst.Arg,)) and parent.keyword is node:
            continue
        yield node, parent


def _unit_names(unit: cst.CSTNode) -> list[cst.Name]:
    """The names read or bound in one small statement, or in a compound statement's header (its
    test or iterable: the body's statements are units of their own)."""
    if isinstance(unit, (cst.If, cst.While)):
        roots: list[cst.CSTNode] = [unit.test]
    elif isinstance(unit, cst.For):
        roots = [unit.target, unit.iter]
    else:
        roots = [unit]
    found: list[cst.Name] = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            found.append(node)
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)  # `x.shape`: the attribute's own name is no variable
        else:
            stack.extend(reversed(code_children(node)))
    return found
