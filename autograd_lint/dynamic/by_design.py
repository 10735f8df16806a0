"""Gradients that differ from the derivative by design (AGL908), and backward's linearity (AGL909).

Some Functions mean their backward not to be the derivative of forward
(docs/runtime-mechanisms.md, M13):

- a straight-through or surrogate estimator: forward is piecewise constant in an input (a step,
  ``round``, ``sign``, a quantizer: its finite-difference Jacobian is zero) and backward passes a
  gradient anyway;
- a gradient modifier: forward returns an input unchanged (numerically: an output equals it) and
  backward scales, reverses or reroutes the gradient (gradient reversal, gradient multipliers,
  a gradient "stitched" onto another input);
- a tangent-space gradient: the tensors hold points of a Lie group or manifold (a quaternion,
  a pose: pypose's LieTensor) and backward returns the gradient in the tangent space (the Lie
  algebra), padded with zeros to the tensor's size. Its Jacobian is exactly zero on the trailing
  coordinate(s) of the last dimension (of the input, or of the output's gradient that backward
  ignores) while forward's finite differences are not, and it differs from them on the other
  coordinates too (a backward that only forgot the last coordinate, and is the derivative on
  the rest, stays an AGL901).

gradcheck fails on both, truthfully and uselessly; ``explain_failure`` recognises them from
forward's numbers alone, input by input, so that a Function that also has a genuinely wrong
gradient for another input stays an AGL901. A docstring saying "straight-through" is only
repeated in the message: words are not evidence.

Backward must be linear in its incoming gradients: autograd sums the gradients of every use of
an output before calling it, and chains it with other nodes' linear maps. gradcheck's slow mode
probes with one-hot, non-negative gradients, so a backward that clamps or gates on the sign of
``grad_output`` (guided backpropagation) passes it. ``nonlinearity`` checks
``backward(a*g1 + b*g2) == a*backward(g1) + b*backward(g2)`` for random signed g1, g2.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from autograd_lint.dynamic.inputs import flatten_outputs

# Words of a docstring or comment that name a deliberate non-derivative; only quoted.
HINT = re.compile(r"straight[- ]through|surrogate|\bSTE\b|gradient reversal|reverse gradient|grad(?:ient)? ?scal\w*",
                  re.IGNORECASE)
ZERO = 1e-12  # a finite-difference Jacobian entry below this is zero (the step is elsewhere)
# Words that, next to a backward whose Jacobian is forward's times a fixed symmetric positive
# semi-definite matrix, say that it is a natural gradient (``natural_gradient``).
NATURAL_HINT = re.compile(r"natural[- ]grad|\bNGD\b|Fisher|natural param|expectation param|d\(eta", re.IGNORECASE)
# Words that, next to a backward whose Jacobian is one constant (a straight-through or sign
# estimator: the message quotes the words found), say that the
# constant is meant: either alone is not enough (``sign_estimator``).
ESTIMATOR_HINT = re.compile(HINT.pattern + r"|estimator|lineari[sz]e|substitut\w* (?:the |a )?gradient|"
                            r"gradient is set to", re.IGNORECASE)


@dataclass
class ByDesign:
    kind: str  # "straight-through or surrogate estimator" | "gradient modifier" | TANGENT
    message: str


TANGENT = "tangent-space gradient"
NATURAL = "natural gradient"


def explain_failure(cls: type, make_inputs: Callable[[], tuple], names: list[str],
                    function: Callable[..., Any], failing: dict[int, tuple[torch.Tensor, torch.Tensor]]
                    ) -> Optional[ByDesign]:
    """``failing``: input index -> (analytical, numerical) Jacobian for each input on which
    gradcheck failed. A ``ByDesign`` when every one of them is explained by forward's shape:
    the input is passed through unchanged, or forward is piecewise constant in it (or, next to a
    pass-through, ignores it: the gradient is rerouted to it)."""
    if not failing:
        return None
    inputs = make_inputs()
    with torch.no_grad():
        outputs = _outputs(function, inputs)
    preconditioned = natural_gradient(cls, failing)
    if preconditioned:
        return ByDesign(NATURAL, f"{NATURAL}: {preconditioned}. gradcheck fails by design (the gradient is "
                                 "not forward's derivative); backward's count, shapes, dtypes and finiteness "
                                 "were checked")
    passed_through = {index for index, value in enumerate(inputs)
                      if isinstance(value, torch.Tensor) and value.is_floating_point()
                      and any(output.shape == value.shape and output.dtype == value.dtype
                              and torch.equal(output, value.detach()) for output in outputs)}
    parts: list[str] = []
    stepped, ignored = [], []
    tangent, surrogate = [], []
    for index, (analytical, numerical) in sorted(failing.items()):
        if not bool(torch.isfinite(analytical).all()):
            return None  # a NaN gradient is never by design: AGL901 says where
        what = _name(index, names)
        if index in passed_through:
            parts.append(f"forward returns {what} unchanged and backward {_scaled(analytical, numerical)}")
            continue
        padded = tangent_layout(analytical, numerical, tuple(inputs[index].shape), [tuple(o.shape) for o in outputs])
        if padded:
            tangent.append(f"the gradient for {what} {padded}")
            continue
        if numerical.numel() and float(numerical.abs().max()) > ZERO:
            # Forward depends smoothly on this input: the gradient should be its derivative, unless
            # backward takes it from another input that forward does not read at all.
            steering = backward_only_inputs(function, inputs, index, outputs, set(failing) | passed_through)
            if not steering:
                constant = sign_estimator(cls, analytical, numerical)
                if not constant:
                    return None
                # Named by the documentation's own words: a documented straight-through clamp
                # is not a "sign estimator".
                surrogate.append(f"backward substitutes the constant {constant} for the derivative in {what} "
                                 f"(by design: its documentation says \"{_documented_as(cls, ESTIMATOR_HINT)}\")")
                continue
            surrogate.append(f"backward computes the gradient for {what} from "
                             f"{', '.join(_name(other, names) for other in steering)}, which forward does not read "
                             "and which gets no gradient: a statistic passed in for backward alone (a moving "
                             "average, a running estimate)")
            continue
        if _changes_output(function, inputs, index, outputs):
            stepped.append(what)
        else:
            ignored.append(what)
    if ignored and not passed_through:
        return None  # a gradient for an input forward never reads, with nothing to reroute from
    if stepped:
        parts.append(f"forward is piecewise constant in {', '.join(stepped)} (its finite-difference "
                     "Jacobian is zero, its value steps) and backward passes a nonzero gradient")
    if ignored:
        parts.append(f"backward reroutes a gradient to {', '.join(ignored)}, which forward does not read")
    parts += surrogate
    if tangent:
        parts.append("; ".join(tangent) + ": a gradient in the tangent space of a Lie group or manifold, padded "
                     "to the tensor's size, not the derivative in the tensor's coordinates")
    kind = "gradient modifier" if passed_through & set(failing) or ignored else \
        TANGENT if tangent and not stepped else "straight-through or surrogate estimator"
    hint = docstring_hint(cls)
    message = (f"{kind}: {'; '.join(parts)}. gradcheck fails by design (the gradient is not forward's "
               "derivative); backward's count, shapes, dtypes and finiteness were checked"
               + (f" (its documentation says \"{hint}\")" if hint else ""))
    return ByDesign(kind, message)


def natural_gradient(cls: type, failing: dict[int, tuple[torch.Tensor, torch.Tensor]]) -> str:
    """How backward's Jacobian is forward's times one fixed symmetric positive semi-definite
    matrix M that is not diagonal (a preconditioner coupling the inputs: the inverse Fisher
    information of a natural gradient, as gpytorch's natural variational distributions return
    the gradient in the expectation parameters), when the class's documentation says so; ""
    otherwise. A diagonal M is a rescaled gradient, a bug AGL901 reports."""
    if not _documentation_matches(cls, NATURAL_HINT, module_too=True):
        return ""
    analytical = torch.cat([failing[index][0] for index in sorted(failing)], dim=1)
    numerical = torch.cat([failing[index][1] for index in sorted(failing)], dim=1)
    if not (bool(torch.isfinite(analytical).all()) and bool(torch.isfinite(numerical).all())):
        return ""
    try:
        preconditioner = torch.linalg.lstsq(numerical, analytical, driver="gelsd").solution
    except RuntimeError:
        return ""
    scale = float(analytical.abs().max()) or 1.0
    if float((numerical @ preconditioner - analytical).abs().max()) > 1e-4 * scale:
        return ""
    symmetric = (preconditioner + preconditioner.mT) / 2
    size = float(symmetric.abs().max()) or 1.0
    if float((numerical @ symmetric - analytical).abs().max()) > 1e-4 * scale:
        return ""
    eigenvalues = torch.linalg.eigvalsh(symmetric)
    off_diagonal = symmetric - torch.diag(torch.diagonal(symmetric))
    if float(eigenvalues.min()) < -1e-6 * size or float(off_diagonal.abs().max()) <= 1e-6 * size:
        return ""
    return ("backward's Jacobian is forward's times one fixed symmetric positive semi-definite matrix that "
            "couples the inputs (a preconditioner: the gradient in other coordinates, as its documentation "
            "says)")


def sign_estimator(cls: type, analytical: torch.Tensor, numerical: torch.Tensor) -> str:
    """"-1" (the constant) when backward's Jacobian for an input holds one value only, up to sign
    (and zeros), where forward's finite differences are not zero, and the class's documentation
    says it estimates
    ("Linearize df/dS=-1 if spike", "sign estimator": snntorch's spike-time losses); "" otherwise.
    Without the words, a constant Jacobian is just as much a forgotten derivative factor (``return
    grad_output`` for ``x ** 2``), which AGL901 reports."""
    nonzero = analytical[analytical != 0]
    varying = numerical[numerical.abs() > ZERO]
    if not nonzero.numel() or not varying.numel():
        return ""
    magnitude = float(nonzero.abs().max())
    if not torch.allclose(nonzero.abs(), torch.full_like(nonzero, magnitude), rtol=1e-9, atol=0):
        return ""
    if not _documentation_matches(cls, ESTIMATOR_HINT):
        return ""
    signs = {float(value) for value in nonzero.sign().unique()}
    return f"{'±' if len(signs) > 1 else '-' if signs == {-1.0} else ''}{magnitude:g}"


def _documented_as(cls: type, pattern: re.Pattern) -> str:
    """The words of the class's documentation that ``pattern`` meets first (``straight-through``)."""
    found = pattern.search(_source_text(cls))
    return found.group(0) if found else ""


def _documentation_matches(cls: type, pattern: re.Pattern, module_too: bool = False) -> bool:
    """The class's source (docstring, comments) matches ``pattern``; or, with ``module_too``, its
    module's (the words are often on the nn.Module that calls ``apply``)."""
    return bool(pattern.search(_source_text(cls, module_too)))


def _source_text(cls: type, module_too: bool = False) -> str:
    """The class's source, or its module's; its docstring when the source cannot be read."""
    try:
        return inspect.getsource(inspect.getmodule(cls) if module_too else cls)
    except (OSError, TypeError):
        return cls.__doc__ or ""


def backward_only_inputs(function: Callable[..., Any], inputs: tuple, index: int, base: list[torch.Tensor],
                         excluded: set[int]) -> list[int]:
    """The other float inputs that forward ignores (no output moves, small step or large), that
    get no gradient, and that change backward's gradient for input ``index``: data handed to
    backward through ``apply``, as pyro's ``_EwmaLogFn(input, ewma)`` hands a moving average."""
    found = []
    for other, value in enumerate(inputs):
        if other == index or other in excluded or not (isinstance(value, torch.Tensor) and value.is_floating_point()):
            continue
        if _changes_output(function, inputs, other, base) or not _flat_near(function, inputs, other, base):
            continue
        first = _gradients(function, inputs, index, other)
        moved = list(inputs)
        moved[other] = (2 * value.detach() + 0.5).requires_grad_(value.requires_grad)
        second = _gradients(function, tuple(moved), index, other)
        if first is None or second is None or first[1] is not None or second[1] is not None:
            continue
        if first[0] is not None and second[0] is not None and not torch.allclose(first[0], second[0]):
            found.append(other)
    return found


def _gradients(function: Callable[..., Any], inputs: tuple, index: int, other: int) -> Optional[tuple]:
    """Backward's gradients for inputs ``index`` and ``other`` (None: no gradient, or all zeros)
    for a fixed random gradient of the outputs, on fresh leaves; None when it raises."""
    arguments = [value.detach().clone().requires_grad_(value.requires_grad)
                 if isinstance(value, torch.Tensor) and value.is_floating_point() else value for value in inputs]
    try:
        with torch.enable_grad():
            outputs = function(*arguments)
            outputs = [output for output in (outputs if isinstance(outputs, tuple) else (outputs,))
                       if output.requires_grad]
            targets = [arguments[index], arguments[other]]
            if not outputs or not all(target.requires_grad for target in targets):
                return None
            generator = torch.Generator().manual_seed(11)
            weights = [torch.randn(output.shape, dtype=output.dtype, generator=generator) for output in outputs]
            grads = torch.autograd.grad(outputs, targets, weights, allow_unused=True)
    except Exception:
        return None
    return tuple(None if grad is None or not bool(grad.any()) else grad.detach() for grad in grads)


def tangent_layout(analytical: torch.Tensor, numerical: torch.Tensor, input_shape: tuple,
                   output_shapes: list[tuple]) -> str:
    """How backward's Jacobian (outputs, input elements) has a tangent-space gradient's layout,
    or "": exactly zero on the trailing coordinate(s) of the input's last dimension (the gradient
    is padded), or on the rows of the trailing coordinate(s) of every output's last dimension
    (backward ignores that part of the incoming gradient), where the finite differences are not
    zero; and different from them elsewhere as well."""
    if not input_shape or not analytical.numel():
        return ""
    free_columns = torch.ones(input_shape, dtype=torch.bool)
    free_rows = torch.ones(analytical.shape[0], dtype=torch.bool)
    said = []
    padded = _trailing_zero_coordinates(analytical.reshape(analytical.shape[0], *input_shape).movedim(0, -1)
                                        .reshape(*input_shape, -1), input_shape[-1])
    if padded:
        free_columns[..., -padded:] = False
        said.append(f"is always zero in the last {_coordinates(padded)} of its last dimension")
    ignored = _ignored_output_coordinates(analytical, output_shapes)
    if ignored:
        start = 0
        for shape in output_shapes:
            size = _numel(shape)
            rows = torch.ones(shape, dtype=torch.bool)
            rows[..., -ignored:] = False
            free_rows[start:start + size] = rows.reshape(-1)
            start += size
        said.append(f"ignores the last {_coordinates(ignored)} of the output's gradient")
    if not said:
        return ""
    columns = free_columns.reshape(-1)
    free = analytical[free_rows][:, columns], numerical[free_rows][:, columns]
    padding = ~(free_rows.unsqueeze(1) & columns.unsqueeze(0))
    if not bool(padding.any()) or float(numerical[padding].abs().max()) <= ZERO:
        return ""  # forward does not depend on those coordinates either: nothing was padded
    if not free[0].numel() or torch.allclose(free[0], free[1], rtol=1e-3, atol=1e-5):
        return ""  # the derivative everywhere else: a dropped coordinate, a bug (AGL901)
    if not bool(free[0].any()):
        return ""  # no gradient at all where one is due: not a tangent space either
    return " and ".join(said)


def _trailing_zero_coordinates(jacobian_by_coordinate: torch.Tensor, size: int) -> int:
    """How many trailing coordinates of the last input dimension have an all-zero Jacobian
    (``jacobian_by_coordinate``: input shape, then the outputs), at most half of them."""
    if size < 2 or jacobian_by_coordinate.dim() < 2:
        return 0
    count = 0
    while count < size // 2 and not bool(jacobian_by_coordinate.select(-2, size - 1 - count).any()):
        count += 1
    return count


def _ignored_output_coordinates(analytical: torch.Tensor, output_shapes: list[tuple]) -> int:
    """How many trailing coordinates of every output's last dimension backward ignores (their
    rows of the Jacobian are zero), at most half; 0 when the outputs disagree."""
    if not output_shapes or any(len(shape) == 0 or shape[-1] < 2 for shape in output_shapes):
        return 0
    counts = []
    start = 0
    for shape in output_shapes:
        size = _numel(shape)
        rows = analytical[start:start + size].reshape(*shape, -1)
        start += size
        count = 0
        while count < shape[-1] // 2 and not bool(rows.select(-2, shape[-1] - 1 - count).any()):
            count += 1
        counts.append(count)
    return counts[0] if len(set(counts)) == 1 else 0


def _numel(shape: tuple) -> int:
    size = 1
    for dimension in shape:
        size *= dimension
    return size


def _coordinates(count: int) -> str:
    return "coordinate" if count == 1 else f"{count} coordinates"


def known_modifier(cls: type, make_inputs: Callable[[], tuple], function: Callable[..., Any]) -> str:
    """The kind of a Function whose backward may clip or gate the gradient by design: forward
    returns one of its float inputs unchanged ("gradient modifier"), or is piecewise constant in
    all of them ("straight-through or surrogate estimator"); "" otherwise."""
    inputs = make_inputs()
    with torch.no_grad():
        outputs = _outputs(function, inputs)
    floats = [index for index, value in enumerate(inputs)
              if isinstance(value, torch.Tensor) and value.is_floating_point() and value.requires_grad]
    if any(output.shape == inputs[index].shape and torch.equal(output, inputs[index].detach())
           for index in floats for output in outputs):
        return "gradient modifier"
    if floats and all(_flat_near(function, inputs, index, outputs) and _changes_output(function, inputs, index, outputs)
                      for index in floats):
        return "straight-through or surrogate estimator"
    return ""


def _flat_near(function: Callable[..., Any], inputs: tuple, index: int, base: list[torch.Tensor]) -> bool:
    """Forward's output does not move for a step of 1e-6 along a random direction of input ``index``."""
    value = inputs[index].detach()
    generator = torch.Generator().manual_seed(7)
    direction = torch.randn(value.shape, dtype=value.dtype, generator=generator)
    arguments = list(inputs)
    arguments[index] = (value + 1e-6 * direction).requires_grad_(True)
    with torch.no_grad():
        try:
            outputs = _outputs(function, tuple(arguments))
        except Exception:
            return False
    return len(outputs) == len(base) and all(o.shape == b.shape and (o.numel() == 0 or float((o - b).abs().max()) <= ZERO)
                                             for o, b in zip(outputs, base))


def docstring_hint(cls: type) -> str:
    match = HINT.search(_source_text(cls))
    return match.group(0) if match else ""


def nonlinearity(cls: type, make_inputs: Callable[[], tuple], names: list[str],
                 computes_in_float32: bool = False) -> Optional[str]:
    """How backward fails ``backward(a*g1 + b*g2) == a*backward(g1) + b*backward(g2)``, or None.
    Each call on fresh, identical inputs (a backward may consume its ctx); None too when backward
    raises or is not repeatable (random): then linearity cannot be judged.

    The tolerance is that of the coarsest dtype in play: forward's outputs (their gradients are
    that dtype, and backward computes in it even when it returns float64), backward's results,
    and float32 when gradcheck found that forward computes in float32 (``computes_in_float32``).
    An exactly linear float32 backward differs from the combination by rounding, about 1e-7."""
    shapes = _gradient_shapes(cls, make_inputs)
    if shapes is None:
        return None
    coarsest = max([torch.finfo(spec[1]).eps for spec in shapes if spec is not None]
                   + ([torch.finfo(torch.float32).eps] if computes_in_float32 else []))
    generator = torch.Generator().manual_seed(20240519)
    g1 = [None if spec is None else torch.randn(spec[0], dtype=spec[1], generator=generator) for spec in shapes]
    g2 = [None if spec is None else torch.randn(spec[0], dtype=spec[1], generator=generator) for spec in shapes]
    a, b = 0.75, -1.25
    mixed = [None if x is None else a * x + b * y for x, y in zip(g1, g2)]
    first, again, second, combined = (_backward(cls, make_inputs, grads) for grads in (g1, g1, g2, mixed))
    if first is None or again is None or second is None or combined is None:
        return None
    if not _same(first, again):
        return None
    for index, (r1, r2, rc) in enumerate(zip(first, second, combined)):
        if not all(isinstance(value, torch.Tensor) and value.is_floating_point() for value in (r1, r2, rc)):
            continue
        if not (r1.shape == r2.shape == rc.shape):
            continue
        expected = a * r1.double() + b * r2.double()
        error = (rc.double() - expected).abs()
        scale = float(expected.abs().max()) + float(r1.abs().max()) + float(r2.abs().max()) + 1.0
        eps = max(coarsest, *(torch.finfo(value.dtype).eps for value in (r1, r2, rc)))
        tolerance = max(1e-9, 100 * eps) * scale
        if float(error.max()) > tolerance:
            return (f"backward is not linear in its gradient: for signed gradients g1, g2, "
                    f"backward({a}*g1 + {b}*g2) differs from {a}*backward(g1) + {b}*backward(g2) by up to "
                    f"{float(error.max()):.4g} in the gradient for {_name(index, names)}; it clamps, gates or "
                    "rescales by the incoming gradient's values, so its result is wrong whenever that gradient "
                    "has both signs (gradcheck probes with one-hot, non-negative gradients and passes it)")
    return None


def _gradient_shapes(cls: type, make_inputs: Callable[[], tuple]) -> Optional[list]:
    with torch.enable_grad():
        outputs = flatten_outputs(cls.apply(*make_inputs()))
    shapes = []
    for value in outputs:
        if isinstance(value, torch.Tensor) and value.requires_grad and value.is_floating_point():
            shapes.append((tuple(value.shape), value.dtype))
        elif isinstance(value, torch.Tensor):
            shapes.append(None)  # zeros, as in checks._grad_for: filled in by _backward
        else:
            shapes.append(None)
    return shapes if any(spec is not None for spec in shapes) else None


def _backward(cls: type, make_inputs: Callable[[], tuple], grads: list) -> Optional[tuple]:
    inputs = make_inputs()
    try:
        with torch.enable_grad():
            outputs = flatten_outputs(cls.apply(*inputs))
        node = next((value.grad_fn for value in outputs
                     if isinstance(value, torch.Tensor) and value.grad_fn is not None
                     and getattr(type(value.grad_fn), "_forward_cls", None) is cls), None)
        if node is None or len(outputs) != len(grads):
            return None
        full = [grad.clone() if grad is not None else
                (torch.zeros_like(value) if isinstance(value, torch.Tensor) else None)
                for grad, value in zip(grads, outputs)]
        with torch.no_grad():
            result = node.apply(*full)
    except Exception:  # backward's failures are gradcheck's and AGL903's to report
        return None
    return result if isinstance(result, tuple) else (result,)


def _same(first: tuple, second: tuple) -> bool:
    if len(first) != len(second):
        return False
    for x, y in zip(first, second):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or not torch.equal(x, y):
                return False
        elif (x is None) != (y is None):
            return False
    return True


def _outputs(function: Callable[..., Any], inputs: tuple) -> list[torch.Tensor]:
    outputs = function(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return [output.detach() for output in outputs]


def _changes_output(function: Callable[..., Any], inputs: tuple, index: int, base: list[torch.Tensor]) -> bool:
    """Whether large moves of input ``index`` (a sign flip, a shift by 0.5, a doubling) change
    forward's output: a piecewise-constant forward steps, one that ignores the input never does."""
    value = inputs[index].detach()
    with torch.no_grad():
        for moved in (-value, value + 0.5, 2 * value + 0.25):
            arguments = list(inputs)
            arguments[index] = moved.clone().requires_grad_(True)
            try:
                outputs = _outputs(function, tuple(arguments))
            except Exception:
                continue
            if len(outputs) != len(base) or any(o.shape != b.shape or not torch.equal(o, b)
                                                for o, b in zip(outputs, base)):
                return True
    return False


def _scaled(analytical: torch.Tensor, numerical: torch.Tensor) -> str:
    """"scales the gradient by -1" when backward's Jacobian is a multiple of the identity forward
    has, else "reroutes the gradient"."""
    if not bool(analytical.any()):
        return "gives it no gradient"
    norm = float((numerical * numerical).sum())
    if norm > 0:
        factor = float((analytical * numerical).sum()) / norm
        if torch.allclose(analytical, factor * numerical, rtol=1e-3, atol=1e-5):
            return f"scales the gradient by {factor:.4g}"
    return "reroutes the gradient"


def _name(index: int, names: list[str]) -> str:
    return f"input {index} (`{names[index]}`)" if index < len(names) else f"input {index}"
