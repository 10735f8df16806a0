"""Which tests in backward ask "does this input need its gradient?" (AGL401's guards).

autograd calls backward once for all inputs, and throws away the gradient of an input that does
not require grad. Real code skips that work in three ways, each a guard here:

- ``ctx.needs_input_grad``, directly or through any name backward binds from it (``need_x,
  need_w = ctx.needs_input_grad``, ``flags = ctx.needs_input_grad`` then ``flags[1]``), or a
  saved input's ``requires_grad`` (``if weight.requires_grad:``);
- a flag forward or setup_context kept on ctx from either (``ctx.need_w = w.requires_grad``,
  ``ctx.flags = ctx.needs_input_grad``), read in backward as ``ctx.need_w``;
- the None-guard: forward keeps a tensor only when some input needs its gradient
  (``ctx.save_for_backward(x if w.requires_grad else None, ...)``, ``... if
  ctx.needs_input_grad[1] else None``, or ``x_saved = None`` then ``if w.requires_grad: x_saved =
  x``), and backward tests what it gets back for None (``if x is not None:``, ``gw = g.t() @ x if
  x is not None else None``). The tensor is None exactly when the gradient that needs it is not
  wanted, so that test is the needs_input_grad test.

A None test on a tensor forward keeps whatever is asked (an optional ``bias`` input) is no
guard: it says nothing about which gradients are wanted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from autograd_lint.analysis.syntax import all_nodes, constant_index, is_ctx_attr, is_none, names_read, target_names

if TYPE_CHECKING:
    from autograd_lint.analysis.class_model import FunctionModel, Method

_SAVED_TENSORS = ("saved_tensors", "saved_variables")


class GradGuards:
    """The guards of one backward: ``asks(test)`` says whether ``test`` is one."""

    def __init__(self, model: "FunctionModel", backward: "Method") -> None:
        self.model = model
        self.backward = backward
        self.ctx_names = model.ctx_names(backward)
        self.grad_names = model.grad_names
        self.flag_attributes: set[str] = set()  # ctx attributes holding a needs-grad flag
        self.kept_if_needed_attributes: set[str] = set()  # ctx attributes None unless a grad is needed
        self.kept_if_needed_positions: set[int] = set()  # the same, for save_for_backward's positions
        self.flag_names: set[str] = set()
        self.kept_if_needed_names: set[str] = set()
        self._read_forward()
        self.kept_if_needed_names = self._kept_if_needed_names()
        self.flag_names = self._flag_names()

    # ---- the question backward asks ----------------------------------------------------------
    def asks(self, test: cst.CSTNode) -> bool:
        """``test`` (an ``if``/``while`` test, a condition, any expression) reads a guard."""
        if names_read(test) & self.flag_names:
            return True
        for node in all_nodes(test):
            if isinstance(node, cst.Attribute):
                if is_ctx_attr(node, self.ctx_names, "needs_input_grad"):
                    return True
                if is_ctx_attr(node, self.ctx_names) and node.attr.value in self.flag_attributes:
                    return True
                if node.attr.value == "requires_grad" and not (
                        isinstance(node.value, cst.Name) and node.value.value in self.grad_names):
                    return True  # a saved input's own flag (a gradient's says nothing)
            elif isinstance(node, cst.Comparison) and self._none_test_of_kept_if_needed(node):
                return True
        return False

    def _none_test_of_kept_if_needed(self, comparison: cst.Comparison) -> bool:
        """``x is not None`` / ``x is None`` on a tensor forward kept only when a gradient is needed."""
        if len(comparison.comparisons) != 1:
            return False
        target = comparison.comparisons[0]
        if not isinstance(target.operator, (cst.Is, cst.IsNot)):
            return False
        left, right = comparison.left, target.comparator
        tested = left if is_none(right) else right if is_none(left) else None
        return tested is not None and self._kept_if_needed(tested)

    def _kept_if_needed(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self.kept_if_needed_names
        if is_ctx_attr(node, self.ctx_names):
            return node.attr.value in self.kept_if_needed_attributes
        return self._saved_position(node) in self.kept_if_needed_positions

    def _saved_position(self, node: cst.CSTNode) -> Optional[int]:
        """``ctx.saved_tensors[1]`` -> 1."""
        if isinstance(node, cst.Subscript) and any(
                is_ctx_attr(node.value, self.ctx_names, a) for a in _SAVED_TENSORS):
            return constant_index(node)
        return None

    # ---- backward's own names ----------------------------------------------------------------
    def _flag_names(self) -> set[str]:
        """Locals of backward bound from a guard (``need_x, need_w = ctx.needs_input_grad``,
        ``flags = ctx.needs_input_grad`` then ``need_w = flags[1]``)."""
        names: set[str] = set()
        self.flag_names = names  # asks() reads it while it grows
        grown = True
        while grown:
            grown = False
            for target, value in self.backward.binding_sites:
                if value is None or not self.asks(value):
                    continue
                for name in target_names(target):  # names bound, not `ctx` of `ctx.flag = ...`
                    if name not in names:
                        names.add(name)
                        grown = True
        return names

    def _kept_if_needed_names(self) -> set[str]:
        """Locals of backward that hold a tensor forward kept only when a gradient is needed:
        ``x, w = ctx.saved_tensors`` at such a position, ``x = ctx.saved_tensors[0]``, ``x =
        ctx.x_or_none``."""
        names: set[str] = set()
        if not (self.kept_if_needed_positions or self.kept_if_needed_attributes):
            return names
        saved_aliases = {
            target.value for target, value in self.backward.binding_sites
            if isinstance(target, cst.Name) and value is not None
            and any(is_ctx_attr(value, self.ctx_names, a) for a in _SAVED_TENSORS)
        }
        for target, value in self.backward.binding_sites:
            if value is None:
                continue
            if isinstance(target, (cst.Tuple, cst.List)) and (
                    any(is_ctx_attr(value, self.ctx_names, a) for a in _SAVED_TENSORS)
                    or (isinstance(value, cst.Name) and value.value in saved_aliases)):
                for position, element in enumerate(target.elements):
                    if isinstance(element, cst.StarredElement):
                        break  # the positions after a starred target are not known
                    if isinstance(element.value, cst.Name) and position in self.kept_if_needed_positions:
                        names.add(element.value.value)
            elif isinstance(target, cst.Name) and self._kept_if_needed(value):
                names.add(target.value)
            elif isinstance(target, cst.Name) and isinstance(value, cst.Subscript) and isinstance(
                    value.value, cst.Name) and value.value.value in saved_aliases:
                if constant_index(value) in self.kept_if_needed_positions:
                    names.add(target.value)
        return names

    # ---- what forward keeps ------------------------------------------------------------------
    def _read_forward(self) -> None:
        model = self.model
        for method in model.forward_methods:
            reader = _ForwardReader(method, model.ctx_names(method))
            for attr_set in model.ctx_attribute_sets:
                if attr_set.method is not method or attr_set.value is None or attr_set.index is not None:
                    continue
                if reader.asks(attr_set.value):
                    self.flag_attributes.add(attr_set.attr)
                elif reader.kept_if_needed(attr_set.value):
                    self.kept_if_needed_attributes.add(attr_set.attr)
            saves = [call for call in model.save_calls if call.method is method and call.args is not None]
            for call in saves:
                for position, arg in enumerate(call.args or []):
                    if reader.kept_if_needed(arg):
                        self.kept_if_needed_positions.add(position)
            # `if ctx.needs_input_grad[1]: ctx.save_for_backward(x, w)` / `else:
            # ctx.save_for_backward(None, w)`: the position None in some save, under a guard.
            if any(reader.under_guard(call.call) for call in saves):
                for call in saves:
                    self.kept_if_needed_positions |= {
                        position for position, arg in enumerate(call.args or []) if is_none(arg)}


class _ForwardReader:
    """What one forward (or setup_context) asks about gradients, and what it keeps only then."""

    def __init__(self, method: "Method", ctx_names: frozenset[str]) -> None:
        self.method = method
        self.ctx_names = ctx_names
        self.flag_names: set[str] = set()
        grown = True
        while grown:
            grown = False
            for target, value in method.binding_sites:
                if isinstance(target, cst.Name) and value is not None and target.value not in self.flag_names \
                        and self.asks(value):
                    self.flag_names.add(target.value)
                    grown = True

    def asks(self, node: cst.CSTNode) -> bool:
        """``node`` reads whether some input needs its gradient: an input's ``requires_grad``,
        ``ctx.needs_input_grad``, or a local bound from one."""
        if names_read(node) & self.flag_names:
            return True
        return any(isinstance(n, cst.Attribute) and (
            n.attr.value == "requires_grad" or is_ctx_attr(n, self.ctx_names, "needs_input_grad"))
            for n in all_nodes(node))

    def kept_if_needed(self, value: cst.BaseExpression, visiting: frozenset[str] = frozenset()) -> bool:
        """``value`` is None unless a gradient is needed: ``x if w.requires_grad else None``, a
        local bound to None and, under such a test, to a tensor, or a name set to None under
        such a test (``if not ctx.needs_input_grad[1]: x = None``)."""
        if isinstance(value, cst.IfExp):
            return self.asks(value.test) and (is_none(value.body) or is_none(value.orelse))
        if not isinstance(value, cst.Name) or value.value in visiting:
            return False
        bindings = [(target, bound) for target, bound in self.method.binding_sites
                    if isinstance(target, cst.Name) and target.value == value.value]
        if any(bound is not None and self.kept_if_needed(bound, visiting | {value.value}) for _, bound in bindings):
            return True
        # `if not ctx.needs_input_grad[1]: x = None`: None only on one side of the test;
        # `x_saved = None` then `if w.requires_grad: x_saved = x`: the tensor only on one side.
        guarded = [bound for target, bound in bindings if self.under_guard(target)]
        has_none = any(is_none(bound) for _, bound in bindings)
        return any(is_none(bound) for bound in guarded) or (has_none and any(not is_none(b) for b in guarded))

    def under_guard(self, node: cst.CSTNode) -> bool:
        """``node`` runs only on one side of an ``if`` whose test asks about gradients."""
        parents = self.method.parents
        child: cst.CSTNode = node
        parent = parents.get(id(node))
        while parent is not None:
            if isinstance(parent, cst.If) and child is not parent.test and self.asks(parent.test):
                return True
            child, parent = parent, parents.get(id(parent))
        return False
