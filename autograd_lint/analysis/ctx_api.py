"""What a ctx has from torch itself: the members a Function's methods may read without setting.

A ctx is an instance of the class torch makes for each Function (``<Name>Backward``), derived
from ``FunctionCtx`` and ``BackwardCFunction``, and through them from the C base
``torch._C._FunctionBase``. Reading one of these in backward needs no assignment in forward
(AGL206), and none of them is a tensor the user kept (AGL201, ``--fix``).

The table is data, with where each member comes from. ``tests/test_ctx_api.py`` compares it with
``dir()`` of the real classes on the installed torch, so a torch that adds a member fails a test
instead of turning each read of it into a false AGL206 error. Members that older torch versions
had and 2.13 no longer has stay listed (``OLDER_TORCH``): code written for them still runs there.
"""

from __future__ import annotations

FUNCTION_CTX = "torch.autograd.function.FunctionCtx"
BACKWARD_C_FUNCTION = "torch.autograd.function.BackwardCFunction"
C_FUNCTION_BASE = "torch._C._FunctionBase"
PER_CLASS = "the <Name>Backward class torch makes for each Function"
OLDER_TORCH = "older torch versions"

CTX_API: dict[str, str] = {
    # FunctionCtx: what forward and setup_context call
    "save_for_backward": FUNCTION_CTX,
    "save_for_forward": FUNCTION_CTX,
    "mark_dirty": FUNCTION_CTX,
    "mark_shared_storage": FUNCTION_CTX,
    "mark_non_differentiable": FUNCTION_CTX,
    "set_materialize_grads": FUNCTION_CTX,
    # BackwardCFunction: what autograd calls on the node
    "apply": C_FUNCTION_BASE,
    "apply_jvp": BACKWARD_C_FUNCTION,
    "_compiled_autograd_key": BACKWARD_C_FUNCTION,
    # the C base (torch._C._FunctionBase): the node's state
    "saved_tensors": C_FUNCTION_BASE,
    "saved_variables": C_FUNCTION_BASE,
    "_raw_saved_tensors": C_FUNCTION_BASE,
    "needs_input_grad": C_FUNCTION_BASE,
    "materialize_grads": C_FUNCTION_BASE,
    "_materialize_non_diff_grads": C_FUNCTION_BASE,
    "maybe_clear_saved_tensors": C_FUNCTION_BASE,
    "to_save": C_FUNCTION_BASE,
    "non_differentiable": C_FUNCTION_BASE,
    "dirty_tensors": C_FUNCTION_BASE,
    "saved_for_forward": C_FUNCTION_BASE,
    "next_functions": C_FUNCTION_BASE,
    "metadata": C_FUNCTION_BASE,
    "name": C_FUNCTION_BASE,
    "requires_grad": C_FUNCTION_BASE,
    "register_hook": C_FUNCTION_BASE,
    "register_prehook": C_FUNCTION_BASE,
    "_register_hook_dict": C_FUNCTION_BASE,
    "_register_hook": BACKWARD_C_FUNCTION,
    "_sequence_nr": C_FUNCTION_BASE,
    "_set_sequence_nr": C_FUNCTION_BASE,
    "_input_metadata": C_FUNCTION_BASE,
    "_is_pure_view": C_FUNCTION_BASE,
    "_get_compiled_autograd_symints": C_FUNCTION_BASE,
    "_compiled_autograd_backward_state": C_FUNCTION_BASE,
    "_get_user_fn": BACKWARD_C_FUNCTION,
    "apply_boxed": BACKWARD_C_FUNCTION,
    # set on the per-Function class
    "_forward_cls": PER_CLASS,
    "_autograd_function_id": PER_CLASS,
    # gone from 2.13's classes, present in earlier releases
    "_is_compiled_autograd_tracing": OLDER_TORCH,
    # every Python object's
    "__class__": "object",
    "__dict__": "object",
}

CTX_MEMBERS: frozenset[str] = frozenset(CTX_API)
