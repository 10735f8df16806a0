"""One confirmer per rule code: ``CONFIRMERS[code](subject) -> (confirmation, evidence)``.

The codes are the catalogue's ``confirmable`` rows (``autograd_lint.catalogue``;
tests/test_catalogue.py keeps the two equal); this dict says which function checks each, as the
confirmers are grouped by what they run (calling, ctx state, in-place writes...).

Each confirmer reads like the "How --dynamic confirms it" section of ``rules/<code>.md``. It may
raise :class:`~autograd_lint.dynamic.confirmers.probe.Unverifiable` (its message is the
evidence); ``autograd_lint.dynamic.confirm`` turns that, and any other exception, into
``unverified``. Imports torch: load only inside the ``--dynamic`` child.
"""

from __future__ import annotations

from typing import Callable

from autograd_lint.dynamic.confirmers import (
    backward_values, calling, ctx_state, double_backward, inplace, transforms,
)
from autograd_lint.dynamic.confirmers.probe import Result, Subject

CONFIRMERS: dict[str, Callable[[Subject], Result]] = {
    "AGL101": backward_values.backward_return_count,
    "AGL102": backward_values.backward_grad_arg_count,
    "AGL104": calling.function_instantiated,
    "AGL105": calling.missing_backward,
    "AGL106": calling.setup_context_mismatch,
    "AGL107": backward_values.stub_derivative,
    "AGL108": backward_values.grad_output_ignored,
    "AGL201": ctx_state.ctx_tensor_attribute,
    "AGL202": ctx_state.save_non_tensor,
    "AGL207": ctx_state.ctx_tensor_attribute,  # AGL201's check: a tensor among the ctx attributes
    "AGL203": ctx_state.saved_tensors_in_forward,
    "AGL204": ctx_state.save_twice,
    "AGL205": ctx_state.saved_count_mismatch,
    "AGL206": ctx_state.ctx_attr_undefined,
    "AGL301": inplace.inplace_grad_output,
    "AGL302": inplace.inplace_saved_tensor,
    "AGL303": inplace.inplace_input_no_mark_dirty,
    "AGL304": inplace.dot_data,
    "AGL305": double_backward.backward_not_differentiable,
    "AGL306": transforms.undefined_grad_arithmetic,
    "AGL401": backward_values.needs_input_grad_unchecked,
    "AGL402": backward_values.factory_without_dtype_device,
    "AGL601": transforms.vmap_rule_conflict,
    "AGL602": transforms.jvp_without_save_for_forward,
}
