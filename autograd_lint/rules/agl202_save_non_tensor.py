"""AGL202 save-non-tensor: save_for_backward given something that is certainly not a tensor or None."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import is_none
from autograd_lint.analysis.input_evidence import judge_parameter
from autograd_lint.analysis.tensorness import Tensorness
from autograd_lint.findings import Finding

CODE = "AGL202"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        inputs = {p.name: p for p in model.inputs or []}
        uses = model.input_uses
        for save in model.save_calls:
            if save.method.inherited or save.args is None:
                continue
            judge = model.judge(save.method)
            for value in save.args:
                if is_none(value):
                    continue
                param = input_named(model, save.method, value, inputs)
                if param is not None:
                    # Only what the input's annotation, default or use says; not its name.
                    verdict = judge_parameter(param.name, param.annotation, param.default, uses[param.name],
                                              is_first=False, by_name=False,
                                              passed=model.passed_literals(param.name))
                else:
                    verdict = judge(value)
                if verdict is Tensorness.NOT_TENSOR:
                    shown = cst.Module([]).code_for_node(value)
                    yield module.at(
                        CODE, model, save.method, save.call,
                        f"save_for_backward({shown}): not a tensor; store non-tensors as ctx attributes "
                        f"(PyTorch raises 'save_for_backward can only save variables')",
                    )
                    break


def input_named(model, method, value, inputs):
    """The forward input ``value`` names (in forward, or unpacked from ``inputs`` in setup_context)."""
    if not isinstance(value, cst.Name):
        return None
    if method.name == "forward":
        return inputs.get(value.value)
    if method.name == "setup_context":
        return inputs.get(model.setup_context_inputs.get(value.value, ""))
    return None
