"""Every rule, one module each. A rule module has ``CODE`` and ``check(module) -> findings``,
reads only the shared analysis (``autograd_lint.analysis``), and documents itself in
``rules/<CODE>.md`` at the repository root."""

from __future__ import annotations

from typing import Callable, Iterable

from autograd_lint.rules import (
    agl101_backward_return_count,
    agl102_backward_grad_arg_count,
    agl103_missing_staticmethod,
    agl104_function_instantiated,
    agl105_missing_backward,
    agl106_setup_context_mismatch,
    agl107_stub_derivative,
    agl108_grad_output_ignored,
    agl201_ctx_tensor_attribute,
    agl202_save_non_tensor,
    agl203_saved_tensors_in_forward,
    agl204_save_twice,
    agl205_saved_count_mismatch,
    agl206_ctx_attr_undefined,
    agl207_ctx_tensor_bypasses_hooks,
    agl301_inplace_grad_output,
    agl302_inplace_saved_tensor,
    agl303_inplace_input_no_mark_dirty,
    agl304_dot_data,
    agl305_backward_not_differentiable,
    agl306_undefined_grad_arithmetic,
    agl401_needs_input_grad_unchecked,
    agl402_factory_without_dtype_device,
    agl501_gradcheck_float32,
    agl502_function_not_gradchecked,
    agl601_vmap_rule_conflict,
    agl602_jvp_without_save_for_forward,
    agl603_autocast_decorator_mismatch,
    agl604_deprecated_amp_decorator,
)

_MODULES = [
    agl101_backward_return_count, agl102_backward_grad_arg_count, agl103_missing_staticmethod,
    agl104_function_instantiated, agl105_missing_backward, agl106_setup_context_mismatch,
    agl107_stub_derivative, agl108_grad_output_ignored, agl201_ctx_tensor_attribute,
    agl202_save_non_tensor, agl203_saved_tensors_in_forward, agl204_save_twice,
    agl205_saved_count_mismatch, agl206_ctx_attr_undefined, agl207_ctx_tensor_bypasses_hooks,
    agl301_inplace_grad_output,
    agl302_inplace_saved_tensor, agl303_inplace_input_no_mark_dirty, agl304_dot_data,
    agl305_backward_not_differentiable, agl401_needs_input_grad_unchecked,
    agl402_factory_without_dtype_device, agl501_gradcheck_float32, agl502_function_not_gradchecked,
    agl306_undefined_grad_arithmetic, agl601_vmap_rule_conflict, agl602_jvp_without_save_for_forward,
    agl603_autocast_decorator_mismatch, agl604_deprecated_amp_decorator,
]

RULE_CHECKS: dict[str, Callable[..., Iterable]] = {m.CODE: m.check for m in _MODULES}
