"""AGL304 dot-data: ``.data`` on a tensor inside a Function class, graded by harm.

- A write through ``.data`` (``x.data.copy_(y)``, ``x.data[i] = v``, ``x.data = y``), anywhere in
  the class: an error. The version counter never sees it, so no saved-tensor check can catch it.
  One exception is a warning: a write in forward into an input that forward returns as is, that
  every caller rebinds to the result and that forward does not keep for backward (a scratch
  buffer the Function fills in place, torchdiffeq's ``_UncheckedAssign``). The harm then depends
  only on whether a caller's op saved an overlapping view before the call, which the class
  cannot show.
- A read in a backward that is itself differentiable (not ``@once_differentiable``, and the value
  does not go only into a compiled extension's call): a warning, it breaks double backward.
- A read in forward/setup_context whose tensor is saved for backward (``save_for_backward(x.data)``
  or a ctx attribute, directly or through a view): a warning. The saved alias shares x's memory
  but not its version counter, so an in-place change of x after forward silently changes what
  backward's math reads. Any other read in forward is silent: forward runs without grad.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method, bind_arguments
from autograd_lint.analysis.flow import NOT_VALUE_WRITES, VIEW_METHODS, is_basic_index
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.non_differentiable import extension_module
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import Finding

CODE = "AGL304"
BACKWARD_METHODS = ("backward", "vjp")
FORWARD_METHODS = ("forward", "setup_context")
_WRITE_HARM = ("the version counter never sees this change, so autograd cannot catch it and gradients "
               "that read this tensor are silently wrong")


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for method in model.methods.values():
            if method.inherited:
                continue
            judge = model.judge(method)
            lines: set[int] = set()
            for node, how in _data_writes(method):
                if judge(node.value) is not Tensorness.TENSOR:
                    continue
                rebound = _rebound_scratch(model, method, node)
                if rebound is not None:
                    finding = module.at(
                        CODE, model, method, node,
                        f"{how} through .data into the input {rebound}, which forward returns and every "
                        f"caller rebinds to the result: an op that saved {rebound} or a view of it before "
                        f"the call silently reads the new values (the version counter cannot warn); "
                        f"harmless only if no saved view covers the elements written",
                        severity="warning",
                    )
                else:
                    finding = module.at(
                        CODE, model, method, node,
                        f"{how} through .data: {_WRITE_HARM}; write to the tensor itself (under "
                        f"torch.no_grad() if it must stay out of the graph)",
                        severity="error",
                    )
                if finding.line not in lines:
                    lines.add(finding.line)
                    yield finding
            for call, helper, how, write in _helper_data_writes(model, method):
                line = helper.span(write).line
                finding = module.at(
                    CODE, model, method, call,
                    f"{how} through .data in {helper.name}() at line {line}, on a tensor passed here: "
                    f"{_WRITE_HARM}; write to the tensor itself",
                    severity="error",
                    related=module.related(helper, write, f"the write through .data in {helper.name}()"),
                )
                if finding.line not in lines:
                    lines.add(finding.line)
                    yield finding
            for node in flagged_reads(model, method):
                if method.name in BACKWARD_METHODS:
                    message = (".data in a differentiable backward breaks double backward (this term "
                               "is silently dropped): use the tensor itself, or mark backward "
                               "@once_differentiable")
                else:
                    message = (".data saved for backward does not share the tensor's version counter: "
                               "an in-place change after forward goes unseen and backward silently "
                               "computes with the changed values; save the tensor itself or .detach()")
                finding = module.at(CODE, model, method, node, message, severity="warning")
                if finding.line not in lines:
                    lines.add(finding.line)
                    yield finding


def flagged_reads(model: FunctionModel, method: Method) -> list[cst.Attribute]:
    """The ``x.data`` reads of ``method`` that the rule reports (the fix rewrites these)."""
    if method.name in BACKWARD_METHODS:
        if "once_differentiable" in method.decorators:
            return []  # backward is not differentiable anyway
        silent = _only_into_extensions(model, method)
    elif method.name in FORWARD_METHODS:
        saved = _saved_data_nodes(model, method)
        silent = None
    else:
        return []
    judge = model.judge(method)
    writes = {id(node) for node, _ in _data_writes(method)}
    result = []
    for node in method.nodes_of(cst.Attribute):
        if node.attr.value != "data" or id(node) in writes or judge(node.value) is not Tensorness.TENSOR:
            continue
        if silent is not None and id(node) in silent:
            continue
        if method.name in FORWARD_METHODS and id(node) not in saved:
            continue
        result.append(node)
    return result


def _rebound_scratch(model: FunctionModel, method: Method, data: cst.Attribute) -> Optional[str]:
    """The input's name when the write through ``data`` (``x.data``) goes into a forward input
    (or a view of it) that forward returns as is, that every caller rebinds to the result
    (``k = F.apply(k, v, i)``) and that forward does not keep for backward: the Function is an
    in-place op by contract, with its own gradient right, so whether the write does harm depends
    only on what the callers saved before the call (torchdiffeq's ``_UncheckedAssign``). None
    otherwise: the write is an error."""
    if method.name != "forward":
        return None
    provenance = model.provenance
    alias = provenance.input_alias(data.value)
    inputs = model.known_inputs
    if alias is None or alias[0] >= len(inputs):
        return None
    position = alias[0]
    name = inputs[position].name
    if not model.rebound_in_place(name) or provenance.keeps_input(position):
        return None
    return name


def _helper_data_writes(model: FunctionModel, method: Method
                        ) -> Iterator[tuple[cst.Call, Method, str, cst.CSTNode]]:
    """Writes through ``.data`` in a helper ``method`` calls (one level deep, see
    ``FunctionModel.helper``) into a parameter bound to a tensor argument: (call, helper,
    how, the write)."""
    if method.name not in BACKWARD_METHODS + FORWARD_METHODS:
        return
    judge = model.judge(method)
    for call in method.nodes_of(cst.Call):
        helper = model.helper(call, passing=lambda value: judge(value) is Tensorness.TENSOR)
        bound = bind_arguments(helper, call) if helper is not None else None
        if not bound:
            continue
        tensors = {param for param, argument in bound.items() if judge(argument) is Tensorness.TENSOR}
        for node, how in _data_writes(helper):
            receiver = node.value
            while isinstance(receiver, cst.Subscript) or (
                    isinstance(receiver, cst.Attribute) and receiver.attr.value in VIEW_METHODS):
                receiver = receiver.value
            if isinstance(receiver, cst.Name) and receiver.value in tensors:
                yield call, helper, how, node
                break


def _data_root(expression: cst.BaseExpression) -> Optional[cst.Attribute]:
    """The ``x.data`` node that ``expression`` is, or is a view of (``x.data``,
    ``x.data.contiguous()``, ``x.data[0]``); None for anything else (a new tensor)."""
    while True:
        if isinstance(expression, cst.Attribute):
            if expression.attr.value == "data":
                return expression
            if expression.attr.value not in VIEW_METHODS:
                return None
            expression = expression.value
        elif (isinstance(expression, cst.Call) and isinstance(expression.func, cst.Attribute)
              and expression.func.attr.value in VIEW_METHODS and expression.func.attr.value != "data"):
            expression = expression.func.value
        elif isinstance(expression, cst.Subscript) and is_basic_index(expression):
            expression = expression.value
        else:
            return None


def _bound_values(method: Method) -> dict[str, list[cst.BaseExpression]]:
    """Every value a plain name is assigned in ``method`` (``w = weight.data.contiguous()``)."""
    result: dict[str, list[cst.BaseExpression]] = {}
    for node in method.nodes_of(cst.Assign):
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                result.setdefault(target.target.value, []).append(node.value)
    return result


def _roots(expression: cst.BaseExpression, bound: dict[str, list[cst.BaseExpression]]) -> list[cst.Attribute]:
    """The ``.data`` nodes ``expression`` aliases, itself or through a name bound to one."""
    values = bound.get(expression.value, []) if isinstance(expression, cst.Name) else [expression]
    return [root for root in map(_data_root, values) if root is not None]


def _saved_data_nodes(model: FunctionModel, method: Method) -> set[int]:
    """ids of the ``.data`` reads whose tensor forward keeps for backward: passed to
    save_for_backward or stored on ctx, directly or through a view or a name."""
    bound = _bound_values(method)
    kept = [arg for call in model.save_calls if call.method is method for arg in (call.args or [])]
    kept += [s.value for s in model.ctx_attribute_sets if s.method is method and s.value is not None]
    return {id(root) for value in kept for root in _roots(value, bound)}


def _only_into_extensions(model: FunctionModel, method: Method) -> set[int]:
    """ids of the ``.data`` reads that go only into compiled extensions' calls (directly, or
    through a name read nowhere else): their result is not differentiable anyway."""
    bound = _bound_values(method)
    arguments = [arg.value for call in method.nodes_of(cst.Call) if extension_module(call, model.qualify)
                 for arg in call.args]
    result: set[int] = set()
    for value in arguments:
        if not isinstance(value, cst.Name):
            root = _data_root(value)
            if root is not None:
                result.add(id(root))
    names_as_arguments: dict[str, int] = {}
    for value in arguments:
        if isinstance(value, cst.Name):
            names_as_arguments[value.value] = names_as_arguments.get(value.value, 0) + 1
    for name, count in names_as_arguments.items():
        occurrences = sum(1 for node in method.nodes_of(cst.Name) if node.value == name)
        if occurrences - len(bound.get(name, [])) == count:  # every read of it is such an argument
            result |= {id(root) for root in _roots(cst.Name(name), bound)}
    return result


def _data_writes(method: Method) -> list[tuple[cst.Attribute, str]]:
    """``x.data`` nodes written through, with how: ``x.data = y``, ``x.data[i] = y``,
    ``x.data += y``, ``x.data.copy_(y)``, ``x.data[i].zero_()``."""
    result: list[tuple[cst.Attribute, str]] = []
    for node in method.nodes_of(cst.Assign, cst.AugAssign, cst.Call):
        if isinstance(node, cst.Call):
            func = node.func
            if (isinstance(func, cst.Attribute) and func.attr.value.endswith("_")
                    and not func.attr.value.startswith("_") and func.attr.value not in NOT_VALUE_WRITES):
                receiver = func.value
                while isinstance(receiver, cst.Subscript):
                    receiver = receiver.value
                if isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
                    result.append((receiver, f"in-place {func.attr.value}()"))
            continue
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            how = "augmented assignment" if isinstance(node, cst.AugAssign) else "assignment"
            if isinstance(target, cst.Subscript):
                how = "item assignment"
            while isinstance(target, cst.Subscript):
                target = target.value
            if isinstance(target, cst.Attribute) and target.attr.value == "data":
                result.append((target, how))
    return result
