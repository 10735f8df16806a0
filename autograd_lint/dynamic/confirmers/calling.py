"""How the Function is called: instantiated (AGL104), no backward (AGL105), setup_context (AGL106)."""

from __future__ import annotations

import re
import warnings

from autograd_lint.dynamic.confirmers.probe import (
    Result, Subject, Unverifiable, apply, backward_error, confirmed, describe_error, fresh_inputs,
    not_reproduced,
)

# apply binds forward's signature (inspect's messages) and then calls setup_context (Python's).
SIGNATURE_ERRORS = re.compile(r"forward|setup_context|required argument|positional argument")


def function_instantiated(subject: Subject) -> Result:
    """AGL104: ``F()`` warns (DeprecationWarning, hidden by default) and ``F()(x)`` raises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            instance = subject.function_class()
        except Exception as error:  # noqa: BLE001
            raise Unverifiable(f"{subject.name}() raised {describe_error(error)}") from error
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    inputs = fresh_inputs(subject)
    try:
        instance(*inputs)
        call_error = None
    except Exception as error:  # noqa: BLE001
        call_error = error
    seen = []
    if deprecations:
        seen.append(f"{subject.name}() warns DeprecationWarning: {str(deprecations[0].message).splitlines()[0]}")
    if isinstance(call_error, RuntimeError) and "Legacy autograd function" in str(call_error):
        seen.append(f"calling the instance raises {describe_error(call_error)}")
    if seen:
        return confirmed("; ".join(seen))
    if call_error is not None:
        raise Unverifiable(f"calling {subject.name}() instance raised {describe_error(call_error)}")
    return not_reproduced(f"{subject.name}() gave no DeprecationWarning and calling the instance worked")


def missing_backward(subject: Subject) -> Result:
    """AGL105: a real backward raises PyTorch's NotImplementedError."""
    error = backward_error(subject)
    if isinstance(error, NotImplementedError):
        return confirmed(describe_error(error))
    if error is not None:
        raise Unverifiable(f"backward raised {describe_error(error)}, not NotImplementedError")
    return not_reproduced("forward and backward ran: the class has a backward or vjp at runtime "
                          "(inherited or assigned)")


def setup_context_mismatch(subject: Subject) -> Result:
    """AGL106: apply binds forward without ctx and calls setup_context(ctx, inputs, output):
    a mismatch raises PyTorch's (or Python's) TypeError at apply."""
    inputs = fresh_inputs(subject)
    try:
        apply(subject, inputs)
    except Unverifiable as failure:
        error = failure.__cause__
        if isinstance(error, TypeError) and SIGNATURE_ERRORS.search(str(error)):
            return confirmed(f"{subject.name}.apply(...) raised {describe_error(error)}")
        raise
    return not_reproduced(f"{subject.name}.apply(...) ran forward and setup_context without error")
