"""AGL108 grad-output-ignored: backward returns a gradient without ever reading its gradient parameters."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.flow import enumerate_paths
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import dotted, names_read
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import Finding
from autograd_lint.rules._common import is_zero_gradient, returned_values

CODE = "AGL108"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        grads = model.grad_names
        if backward is None or not grads:
            continue
        paths = enumerate_paths(backward.node)
        if paths is None:
            continue
        judge = model.judge(backward)
        reads_by_return: dict[int, list[bool]] = {}
        reads_grad: dict[int, bool] = {}  # path elements are shared between paths: read each once

        def reads(element) -> bool:
            if id(element) not in reads_grad:
                reads_grad[id(element)] = bool(names_read(element) & grads)
            return reads_grad[id(element)]

        for path in paths:
            if isinstance(path.ends_with, cst.Return):
                reads_on_path = any(reads(element) for element in path.elements)
                reads_by_return.setdefault(id(path.ends_with), []).append(reads_on_path)
        for ret in backward.returns:
            seen = reads_by_return.get(id(ret))
            if not seen or any(seen):
                continue
            values = returned_values(ret.value, judge)
            if values is None and ret.value is not None and judge(ret.value) is Tensorness.TENSOR:
                values = [ret.value]  # `return ctx.grad`: one tensor, whatever its count
            # A gradient is a value it knows to be a tensor: one from a side channel
            # (`ctx.portal.use_grad()`, fairscale's pipeline) cannot be judged, and stays silent.
            if values and any(v is not None and not is_zero_gradient(v, judge) and judge(v) is Tensorness.TENSOR
                              for v in values):
                if not model.provenance.outputs_read_input_values():
                    break  # forward's outputs are constant in its inputs: any gradient is made up on purpose
                if _made_up_at_random(model, backward):
                    break
                yield module.at(
                    CODE, model, backward, ret,
                    f"backward returns a gradient without reading {', '.join(sorted(grads))}: "
                    f"multiply by the incoming gradient (chain rule); the gradient is silently wrong whenever "
                    f"the incoming gradient is not all ones",
                )


# torch's random draws: a gradient made of them is invented, not a derivative missing its factor.
_RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
                               "normal", "bernoulli", "poisson", "multinomial"})
_RANDOM_FILLS = frozenset({"uniform_", "normal_", "random_", "bernoulli_", "exponential_", "cauchy_",
                           "log_normal_", "geometric_"})


def _made_up_at_random(model: FunctionModel, backward: Method) -> bool:
    """backward reads nothing of forward (no ctx, no gradient) and draws random numbers: the
    gradient it returns is invented on purpose, as tests of autograd's own machinery do
    (torch's distributed-autograd tests return a random sparse gradient to check how it is
    copied). Multiplying it by the incoming gradient would not make it a derivative, so the
    rule's advice does not apply."""
    if names_read(backward.node.body) & (model.ctx_names(backward) | model.grad_names):
        return False
    for call in backward.nodes_of(cst.Call):
        qualified = model.qualify(dotted(call.func) or "")
        if qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in _RANDOM_FACTORIES:
            return True
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _RANDOM_FILLS:
            return True
    return False
