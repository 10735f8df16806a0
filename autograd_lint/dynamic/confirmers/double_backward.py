"""Double backward through the user's backward (AGL305, and AGL304 for ``.data`` in backward).

A backward that leaves autograd (``.detach()``, ``.numpy()``, ``.item()``, ``.data``, no_grad)
gives correct first-order gradients; the damage shows only in second derivatives, which
gradgradcheck compares with finite differences. gradcheck runs first: when first-order
gradients are already wrong, a second-order failure proves nothing about this finding. On
structured inputs (a covariance, a Cholesky factor) both compare along the structured set only
(``structure.project``).
"""

from __future__ import annotations

import torch

from autograd_lint.dynamic import structure
from autograd_lint.dynamic.confirmers.probe import (
    Result, Subject, Unverifiable, confirmed, describe_error, fresh_inputs, not_reproduced,
)


def double_backward_check(subject: Subject) -> Result:
    inputs = fresh_inputs(subject)
    positions = [i for i, v in enumerate(inputs)
                 if isinstance(v, torch.Tensor) and v.requires_grad and v.dtype == torch.float64]
    if not positions:
        raise Unverifiable("no float64 input that requires grad to differentiate twice")

    structures = structure.of(subject.make_inputs)

    def function(*tensors: torch.Tensor):
        arguments = list(inputs)
        for position, tensor in zip(positions, tensors):
            arguments[position] = structure.onto(tensor, structures[position] if position < len(structures) else None)
        output = subject.function_class.apply(*arguments)
        outputs = output if isinstance(output, tuple) else (output,)
        return tuple(o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad)

    tensors = tuple(inputs[i] for i in positions)
    try:
        torch.autograd.gradcheck(function, tensors)
    except Exception as error:  # noqa: BLE001
        raise Unverifiable(f"first-order gradcheck already fails ({describe_error(error)}); "
                           f"see AGL901") from error
    try:
        torch.autograd.gradgradcheck(function, tensors)
    except RuntimeError as error:  # GradcheckError is a RuntimeError
        # PyTorch's first line ends with a comma: the rest of the sentence is on the next line.
        return confirmed(f"gradgradcheck failed: {describe_error(error).rstrip(',')}")
    return not_reproduced("gradgradcheck passed: second derivatives through backward are right "
                          "on this example")


def backward_not_differentiable(subject: Subject) -> Result:
    """AGL305: gradgradcheck fails when backward leaves autograd without @once_differentiable."""
    return double_backward_check(subject)
