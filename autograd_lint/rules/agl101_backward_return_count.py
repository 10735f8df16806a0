"""AGL101 backward-return-count: backward returns a different number of gradients than forward has inputs."""

from __future__ import annotations

from typing import Iterator, Optional

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding
from autograd_lint.rules._common import (
    all_outputs_non_differentiable,
    plural,
    raises_only,
    reachable_returns,
    reaches_output_through_arithmetic,
    returned_values,
)

CODE = "AGL101"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward, inputs = model.own("backward"), model.inputs
        if backward is None or inputs is None or all_outputs_non_differentiable(model):
            continue
        required = sum(1 for p in inputs if not p.has_default)
        if model.style == "new":
            required = len(inputs)  # apply binds the defaults: PyTorch counts every input
        passed = [c for c in module.project.apply_arg_counts.get(module.key_of(model), []) if c is not None]
        names = ", ".join(p.name for p in inputs)
        if not backward.returns:
            if not raises_only(backward):
                problem = _problem(1, [None], required, len(inputs), passed)
                if problem:
                    yield module.at_def(CODE, model, backward,
                                        f"backward has no return (returns None: 1 value) {problem} ({names}); {_RAISES}")
            continue
        judge = model.judge(backward)
        for ret in reachable_returns(backward):
            if ret.value is not None and judge.is_list(ret.value):
                yield module.at(CODE, model, backward, ret, _list_message(required, len(inputs), names))
                continue
            values = returned_values(ret.value, judge)
            if values is None or len(values) == 0:  # uncountable, or `return ()`
                continue
            problem = _problem(len(values), values, required, len(inputs), passed)
            if problem:
                yield module.at(CODE, model, backward, ret,
                                f"backward returns {plural(len(values), 'value')} {problem} ({names}); {_RAISES}"
                                + _not_none(model, len(values)))


def _not_none(model, returned: int) -> str:
    """Why no None may fill the gap (and --fix offers none): a left-out input that forward's
    output depends on through differentiable arithmetic would then never get a gradient."""
    trained = reaches_output_through_arithmetic(model, returned)
    if not trained:
        return ""
    which = ", ".join(trained)
    return (f"; forward's output depends on {which} through differentiable arithmetic: return "
            f"{'its gradient' if len(trained) == 1 else 'their gradients'}, not None (a None would silently "
            f"never train {'it' if len(trained) == 1 else 'them'}, so no fix is offered)")


_RAISES = "backward raises 'returned an incorrect number of gradients'"


def _list_message(required: int, total: int, names: str) -> str:
    """A list is one value to autograd whatever it holds (docs/runtime-mechanisms.md, F1): with
    one input autograd rejects it as no tensor, with more the count is wrong. Either way every
    backward through this return raises; no None would help, a tuple does."""
    if total == 1 or required == 1:
        # Legacy `forward(ctx, x, scale=2.0)` called as `apply(x)` expects one value too.
        error = "'expected Variable or None (got list)'"
        if total > 1:
            error += " (or 'returned an incorrect number of gradients' when the call passes more arguments)"
    else:
        error = "'returned an incorrect number of gradients'"
    takes = plural(total, "input") if total == required else f"{required} to {total} inputs"
    return (f"backward returns a list, which autograd takes as one gradient, not one per input "
            f"(forward takes {takes}: {names}); backward raises {error}: return a tuple, one value per input")


def _problem(count: int, values: list, required: int, total: int, passed: list[int]) -> Optional[str]:
    if count < required:
        # Inputs with defaults may or may not be passed (the old style does not bind them).
        takes = f"{required} to {total} inputs" if total > required else plural(required, "input")
        return f"but forward takes {takes}: return one gradient per input, None for non-tensors"
    if count < total and any(p > count for p in passed):
        return (f"but an .apply(...) call passes {max(passed)} arguments: "
                f"return one gradient per argument passed, None for non-tensors")
    if count > total and any(v is not None for v in values[total:]):
        return f"but forward takes only {plural(total, 'input')}: extra values must be None"
    return None
