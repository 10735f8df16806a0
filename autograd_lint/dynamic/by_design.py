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
  the rest, stays an AGL901);
- a quantized forward with a real-valued backward (``rounded_slope``): forward rounds a smooth
  formula to a fine grid (fixed-point arithmetic emulating neuromorphic hardware), so its finite
  differences are zero or jumps, and over steps of many grid cells its slope is backward's
  gradient. Where that slope is steady and is not backward's (a forgotten factor), the input is
  not explained (AGL901, and ``rounding_note`` says so in the message) unless the class says it
  estimates; a coarse step (``round``, ``sign``) has no steady slope and stays piecewise constant;
- a fixed hyper-parameter of an estimator: an input forward depends on smoothly and backward
  gives no gradient (None or zeros: a step size, a threshold), explained only when another input
  is estimated (piecewise constant, rounded or a documented surrogate); in a smooth Function it
  is a weight that never trains (AGL901);
- a gradient token (``gradient_token``): no input moves forward's outputs and backward sends a
  gradient; the same numbers as a forward that returns zeros by mistake, so the class's own text
  must say "token", "inject" or "route";
- an attribution rule (``attribution_rule``): guided backpropagation and DeConvNet replace a
  ReLU's backward by the positive part of the incoming gradient (gated by forward's slope, or
  not); saliency maps are made of it. Gating on the gradient's sign is also a bug, so the class's
  text must say "guided backprop", "DeConvNet", "saliency" or "attribution" (or its module's
  name the method);
- relevance propagation (``relevance_propagation``, LRP): backward returns *relevance*, the
  incoming values redistributed over the inputs (lxt's epsilon, identity, uniform and softmax
  rules), not the gradient. Its numbers: relevance is conserved (each output element hands its
  value down whole, less what a bias absorbs), or it is "gradient times input over output" (the
  epsilon rule). Both also fit common bugs (``return grad_output``), so the class's own text
  must say "relevance", "LRP" or "conservation" (lxt's ``@conservation_check_wrap``).

gradcheck fails on all of them, truthfully and uselessly; ``explain_failure`` recognises them from
forward's numbers, input by input, so that a Function that also has a genuinely wrong
gradient for another input stays an AGL901. Where the numbers also fit a common bug (a constant
Jacobian, a symmetric preconditioner, a constant forward), the class's words are required as
well; elsewhere a docstring saying "straight-through" is only repeated in the message: words
alone are not evidence.

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


# Words that, next to a forward whose outputs no input moves, say that it is a gradient token
# (``gradient_token``): the same numbers are a forward that returns zeros by mistake.
TOKEN_HINT = re.compile(r"\btoken\b|\binject\w*|\brout(?:e|es|ed|ing)\b", re.IGNORECASE)
# Words that, next to a backward that conserves what it hands down or is "gradient times input
# over output", say that it propagates relevance (``relevance_propagation``): the same numbers
# are ``return grad_output`` for a forward that is not the identity.
RELEVANCE_HINT = re.compile(r"relevance|\bLRP\b|conservation", re.IGNORECASE)
# Words that, next to a backward that passes on only the positive part of the incoming gradient
# (through forward's own gate), say that it is an attribution method's rule (``attribution_rule``):
# the same numbers are a backward that gates on the gradient's sign by mistake.
ATTRIBUTION_HINT = re.compile(r"guided[ _-]?backprop\w*|deconv[ _-]?net|saliency|attribution", re.IGNORECASE)
# What the module's text may say instead, for a class without words of its own (monai's
# ``_AutoGradReLU`` in its guided-backpropagation module): the methods' names only ("attribution"
# is also in licence headers).
ATTRIBUTION_MODULE_HINT = re.compile(r"guided[ _-]?backprop\w*|deconv[ _-]?net", re.IGNORECASE)


@dataclass
class ByDesign:
    kind: str  # ESTIMATOR | MODIFIER | TANGENT | NATURAL | QUANTIZED | TOKEN | RELEVANCE | ATTRIBUTION, maybe + WITH_HYPERPARAMETER
    message: str


ESTIMATOR = "straight-through or surrogate estimator"
MODIFIER = "gradient modifier"
TANGENT = "tangent-space gradient"
NATURAL = "natural gradient"
QUANTIZED = "quantized forward, real-valued backward"
TOKEN = "gradient token"
RELEVANCE = "relevance propagation (LRP)"
ATTRIBUTION = "attribution rule (guided backpropagation, DeConvNet)"
WITH_HYPERPARAMETER = " with a fixed hyper-parameter"  # appended to an estimator's kind


def explain_failure(cls: type, make_inputs: Callable[[], tuple], names: list[str],
                    function: Callable[..., Any], failing: dict[int, tuple[torch.Tensor, torch.Tensor]]
                    ) -> Optional[ByDesign]:
    """``failing``: input index -> (analytical, numerical) Jacobian for each input on which
    gradcheck failed. A ``ByDesign`` when every one of them is explained by forward's shape:
    the input is passed through unchanged, or forward is piecewise constant in it (or, next to a
    pass-through, ignores it: the gradient is rerouted to it), or forward rounds a smooth formula
    whose derivative backward is, or, next to an estimator, it is a hyper-parameter backward
    gives no gradient; or forward ignores every input and the class says it is a token."""
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
    stepped, ignored, quantized, hyperparameters = [], [], [], []
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
        if numerical.numel() and float(numerical.abs().max()) > ZERO and not _jumps_only(analytical, numerical):
            if not bool(analytical.any()):
                # Forward depends smoothly on it and backward gives it nothing: a fixed
                # hyper-parameter when the class estimates another input's gradient (decided
                # after the loop), else a forgotten gradient.
                hyperparameters.append(what)
                continue
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
        if not _changes_output(function, inputs, index, outputs):
            ignored.append(what)
            continue
        slope = rounded_slope(function, inputs, index, analytical, outputs)
        if slope is not None and slope.matches:
            quantized.append((what, slope))
        elif slope is not None and slope.differs and not _documentation_matches(cls, ESTIMATOR_HINT):
            # Forward rounds a smooth formula to a fine grid, and backward is not that formula's
            # derivative (a factor forgotten), nor documented as an estimator: AGL901.
            return None
        else:
            stepped.append(what)
    if hyperparameters and not (stepped or quantized or surrogate):
        return None  # a parameter forward uses and backward forgets, in a Function that estimates nothing
    if ignored and not passed_through:
        if stepped or quantized or surrogate or tangent or hyperparameters or parts:
            return None  # a gradient for an input forward never reads, with nothing to reroute from
        token = gradient_token(cls, function, inputs, outputs)
        if not token:
            return None  # the same numbers as a forward that returns zeros by mistake
        return ByDesign(TOKEN, f"{TOKEN}: forward's outputs do not move when any input does (small steps or "
                               f"large) and backward sends a gradient to {', '.join(ignored)}: a token that "
                               f"injects or routes a gradient (by design: its documentation says \"{token}\"). "
                               "gradcheck fails by design (the gradient is not forward's derivative); backward's "
                               "count, shapes, dtypes and finiteness were checked")
    if stepped:
        parts.append(f"forward is piecewise constant in {', '.join(stepped)} (its finite-difference "
                     "Jacobian is zero, its value steps) and backward passes a nonzero gradient")
    if quantized:
        parts.append(f"forward rounds to a grid in {', '.join(what for what, _ in quantized)} (its finite-"
                     "difference Jacobian is zero or jumps) and over steps of many grid cells its slope is "
                     f"backward's gradient (within {max(slope.error for _, slope in quantized):.0%}): backward "
                     "differentiates the unrounded formula, as a fixed-point or integer-arithmetic forward "
                     "(neuromorphic hardware emulation) is meant to be trained")
    if ignored:
        parts.append(f"backward reroutes a gradient to {', '.join(ignored)}, which forward does not read")
    parts += surrogate
    if tangent:
        parts.append("; ".join(tangent) + ": a gradient in the tangent space of a Lie group or manifold, padded "
                     "to the tensor's size, not the derivative in the tensor's coordinates")
    if hyperparameters:
        parts.append(f"{', '.join(hyperparameters)} {'is a' if len(hyperparameters) == 1 else 'are'} fixed "
                     f"hyper-parameter{'' if len(hyperparameters) == 1 else 's'} (a step size, a threshold, "
                     "quantization levels): forward depends on it and backward gives it no gradient")
    kind = MODIFIER if passed_through & set(failing) or ignored else \
        TANGENT if tangent and not stepped else \
        QUANTIZED if quantized and not (stepped or surrogate) else ESTIMATOR
    if hyperparameters:
        kind += WITH_HYPERPARAMETER
    hint = docstring_hint(cls)
    message = (f"{kind}: {'; '.join(parts)}. gradcheck fails by design (the gradient is not forward's "
               "derivative); backward's count, shapes, dtypes and finiteness were checked"
               + (f" (its documentation says \"{hint}\")" if hint else ""))
    return ByDesign(kind, message)


def relevance_propagation(cls: type, function: Callable[..., Any], inputs: tuple,
                          analytical: dict[int, torch.Tensor], numerical: dict[int, torch.Tensor],
                          names: list[str]) -> str:
    """How backward propagates relevance (LRP) rather than the gradient, or "".

    ``analytical`` and ``numerical``: input index -> backward's and forward's finite-difference
    Jacobian, (output elements, input elements), for every float input that requires grad.
    Backward's Jacobian row j is the relevance each input element gets when output element j
    holds relevance 1. It is relevance propagation, where the class's own text says so
    (``RELEVANCE_HINT``), when the inputs that get any relevance (the receivers: activations;
    weights and biases get none) satisfy one of the LRP rules' numbers:

    - conservation: for most output elements j, the relevance handed down, ``z_j * sum_i
      sum_k A_i[j, k]``, is ``z_j - z0_j`` within 2%, where ``z0`` is forward with every
      receiver set to zero (what a bias contributes, and LRP lets it absorb). Identity, uniform
      (``R / 2`` to each factor), epsilon rules on linear layers, sums, means and lxt's layer
      norm (the epsilon rule with the standard deviation detached) all give it;
    - the epsilon rule / Taylor decomposition at the input ("gradient times input over output"):
      ``z_j * A_i[j, k] == c_i * x_k * N_i[j, k]`` for one constant 0 < c_i <= 1 per receiver
      (1/2 where the uniform rule splits between two factors). lxt's softmax rule (Deep Taylor
      Decomposition with bias) gives it and not conservation.

    A backward that hands down twice the relevance, or a gradient times something that varies,
    meets neither; the class's words then do not help (AGL901). The module's text is not read:
    it may describe another class (lxt's every class says "relevance" in its own docstring)."""
    words = _documented_as(cls, RELEVANCE_HINT)
    if not words or not analytical:
        return ""
    receivers = [index for index, jacobian in sorted(analytical.items()) if bool(jacobian.any())]
    if not receivers or any(not bool(torch.isfinite(analytical[index]).all()) for index in receivers):
        return ""
    try:
        with torch.no_grad():
            values = torch.cat([output.reshape(-1) for output in _outputs(function, inputs)]).double()
            zeroed = list(inputs)
            for index in receivers:
                zeroed[index] = torch.zeros_like(inputs[index].detach()).requires_grad_(True)
            floor = torch.cat([output.reshape(-1) for output in _outputs(function, tuple(zeroed))]).double()
    except Exception:  # forward refuses zeros: conservation cannot be judged, the epsilon form can
        floor = None
    what = ", ".join(_name(index, names) for index in receivers)
    if floor is not None and floor.shape == values.shape and analytical[receivers[0]].shape[0] == values.numel():
        handed = sum(analytical[index].double().sum(dim=1) for index in receivers) * values
        if _mostly_close(handed, values - floor):
            return (f"{RELEVANCE}: backward hands {what} the incoming values as relevance, conserved (each output "
                    "element's relevance is passed down whole, less what a bias absorbs), not the gradient "
                    f"(its documentation says \"{words}\")")
    factors = []
    for index in receivers:
        if index not in numerical or numerical[index].shape != analytical[index].shape:
            return ""
        factor = _epsilon_rule_factor(analytical[index].double(), numerical[index].double(),
                                      inputs[index].detach().reshape(-1).double(), values)
        if factor is None:
            return ""
        factors.append(factor)
    # A share below 1: the uniform rule splits the relevance between factors (lxt's matmul: 1/2 each).
    shared = (", shared " + " / ".join(f"{factor:.2g}" for factor in factors)
              if any(abs(factor - 1) > 0.02 for factor in factors) else "")
    return (f"{RELEVANCE}: backward returns relevance for {what} by the epsilon rule (gradient times input over "
            f"output{shared}), not the gradient (its documentation says \"{words}\")")


def attribution_rule(cls: type, make_inputs: Callable[[], tuple], function: Callable[..., Any]) -> str:
    """How backward passes on the positive part of the incoming gradient, as guided
    backpropagation and DeConvNet do, or "".

    For one float input and one output of its shape (an elementwise activation), and a signed
    random gradient ``g``: backward's result is ``max(g, 0)`` wherever it is not zero, and where
    it is zero while ``g`` is positive, forward is flat (its slope, by central differences, is
    zero: the ReLU's gate). DeConvNet passes ``max(g, 0)`` everywhere, guided backpropagation
    through forward's gate. The class's text must say so (``ATTRIBUTION_HINT``: its docstring
    first), or its module's must name the method (``ATTRIBUTION_MODULE_HINT``)."""
    words = (_words(ATTRIBUTION_HINT, inspect.getdoc(cls) or "") or _documented_as(cls, ATTRIBUTION_HINT)
             or _words(ATTRIBUTION_MODULE_HINT, _source_text(cls, module_too=True)))
    if not words:
        return ""
    inputs = make_inputs()
    floats = [index for index, value in enumerate(inputs)
              if isinstance(value, torch.Tensor) and value.is_floating_point() and value.requires_grad]
    if len(floats) != 1:
        return ""
    value = inputs[floats[0]].detach()
    with torch.no_grad():
        try:
            outputs = _outputs(function, inputs)
        except Exception:
            return ""
    if len(outputs) != 1 or outputs[0].shape != value.shape or not value.numel():
        return ""
    generator = torch.Generator().manual_seed(1412)
    incoming = torch.randn(value.shape, dtype=outputs[0].dtype, generator=generator)
    result = _backward(cls, make_inputs, [incoming])
    if result is None or len(result) <= floats[0] or not isinstance(result[floats[0]], torch.Tensor):
        return ""
    passed = result[floats[0]].double()
    positive = incoming.double().clamp(min=0)
    if passed.shape != positive.shape or not bool((incoming < 0).any()) or not bool((incoming > 0).any()):
        return ""
    through = passed != 0
    if not torch.allclose(passed[through], positive[through], rtol=1e-6, atol=1e-9):
        return ""
    slope = _elementwise_slope(function, inputs, floats[0])
    stopped = (~through) & (incoming > 0)
    if slope is None or bool((slope[stopped].abs() > 1e-6).any()):
        return ""
    gated = bool(stopped.any())
    return (f"{ATTRIBUTION}: backward passes on only the positive part of the incoming gradient"
            + (", through forward's gate" if gated else "") + ", not the gradient"
            + f" (its documentation says \"{words}\")")


def _elementwise_slope(function: Callable[..., Any], inputs: tuple, index: int) -> Optional[torch.Tensor]:
    """Forward's derivative, element by element, by central differences (an elementwise forward)."""
    value = inputs[index].detach().double()
    step = 1e-6
    slopes = []
    for moved in (value + step, value - step):
        arguments = list(inputs)
        arguments[index] = moved.to(inputs[index].dtype).requires_grad_(True)
        with torch.no_grad():
            try:
                outputs = _outputs(function, tuple(arguments))
            except Exception:
                return None
        slopes.append(outputs[0].double())
    return (slopes[0] - slopes[1]) / (2 * step)


def documents_relevance(cls: type) -> bool:
    """The class's own text says it propagates relevance (``RELEVANCE_HINT``)."""
    return _documentation_matches(cls, RELEVANCE_HINT)


def _mostly_close(found: torch.Tensor, expected: torch.Tensor) -> bool:
    """Within 2% of the larger magnitude (plus 1e-6) on at least 90% of the elements that are not
    zero in both: the rules' stabilizer ``z + eps`` is off near outputs close to zero."""
    if not found.numel() or found.shape != expected.shape:
        return False
    scale = found.abs().maximum(expected.abs())
    if not float(scale.max()) > 1e-6:
        return False
    counted = scale > 1e-6 * float(scale.max())  # a sparse Jacobian's zeros would agree by themselves
    close = (found - expected).abs()[counted] <= 0.02 * scale[counted] + 1e-6
    return float(close.double().mean()) >= 0.9


def _epsilon_rule_factor(analytical: torch.Tensor, numerical: torch.Tensor, value: torch.Tensor,
                         outputs: torch.Tensor) -> Optional[float]:
    """c when ``outputs_j * analytical[j, k] == c * value_k * numerical[j, k]`` (mostly), with
    0 < c <= 1; None otherwise."""
    if outputs.numel() != analytical.shape[0] or value.numel() != analytical.shape[1]:
        return None
    found = outputs.unsqueeze(1) * analytical
    taylor = value.unsqueeze(0) * numerical
    norm = float((taylor * taylor).sum())
    if norm <= 0:
        return None
    factor = float((found * taylor).sum()) / norm
    if not 0 < factor <= 1.02 or not _mostly_close(found, factor * taylor):
        return None
    return factor


def _jumps_only(analytical: torch.Tensor, numerical: torch.Tensor) -> bool:
    """Forward's finite differences are zero but for a few entries far larger than any of
    backward's: an element that lies within eps of a rounding step (its jump over 2 eps), not
    a slope. Treated as zero, as a piecewise-constant forward's."""
    jumps = numerical[numerical.abs() > ZERO]
    if not jumps.numel():
        return False
    scale = float(analytical.abs().max())
    return (scale > 0 and float(jumps.abs().min()) > 100 * scale
            and jumps.numel() <= 0.25 * int((analytical != 0).sum()))


# Central differences for ``rounded_slope`` span this many half grid cells (and twice as many).
GRID_CELLS = 8


@dataclass
class RoundedSlope:
    """Forward's slope over steps of many grid cells (``rounded_slope``) against backward's."""

    step: float  # the finite-difference step used, in the input's units
    error: float  # |slope - backward's| / |slope|, along one random direction
    factor: Optional[float] = None  # slope = factor * backward's, when one factor fits (within 10%)

    @property
    def matches(self) -> bool:
        return self.error <= 0.1

    @property
    def differs(self) -> bool:
        return self.error >= 0.3


def rounded_slope(function: Callable[..., Any], inputs: tuple, index: int, analytical: torch.Tensor,
                  base: list[torch.Tensor]) -> Optional[RoundedSlope]:
    """How backward compares with the slope of the smooth formula that forward rounds to a fine
    grid (``floor(v * 2**8) / 2**8``, a fixed-point state), along one random direction of input
    ``index``; None when forward is not such a rounding (a coarse step such as ``round`` or
    ``sign``, whose slope nobody means) or the slope cannot be read.

    The grid is found by moving the input by t = 2**-20 .. 2**-3 of its size (root mean square)
    until half of the outputs backward says depend on it have changed: t is then about half a
    grid cell in the input's units. Central differences over GRID_CELLS and twice as many such
    steps round each output by at most 1/GRID_CELLS and 1/(2 GRID_CELLS) of its change. Both
    must agree within 10% (forward follows a smooth formula at that scale), and the larger step
    must stay within half the input's size (a local slope, not a coarse quantizer's trend)."""
    value = inputs[index].detach()
    if not value.numel():
        return None
    size = float(value.double().pow(2).mean().sqrt()) or 1.0
    direction = torch.randn(value.shape, dtype=value.dtype, generator=torch.Generator().manual_seed(13))
    expected = analytical @ direction.reshape(-1).to(analytical.dtype)  # backward's directional derivative
    if not bool(expected.any()):
        return None
    responding = expected.abs() > 1e-9 * float(expected.abs().max())
    start = _flat_moved(function, inputs, index, value)
    if start is None or start.shape != expected.shape:
        return None
    grid = None
    for power in range(20, 2, -1):
        moved = _flat_moved(function, inputs, index, value + size * 2.0 ** -power * direction)
        if moved is None or moved.shape != start.shape:
            return None
        if float((moved != start)[responding].double().mean()) >= 0.5:
            grid = size * 2.0 ** -power
            break
    if grid is None or grid <= size * 2.0 ** -20 or GRID_CELLS * 2 * grid > size / 2:
        return None  # no grid, a continuous forward, or a coarse step
    slopes = []
    for step in (GRID_CELLS * grid, GRID_CELLS * 2 * grid):
        plus = _flat_moved(function, inputs, index, value + step * direction)
        minus = _flat_moved(function, inputs, index, value - step * direction)
        if plus is None or minus is None:
            return None
        slopes.append((plus - minus).double() / (2 * step))
    near, far = slopes
    scale = max(float(near.norm()), float(far.norm()))
    if not scale or float((near - far).norm()) > 0.1 * scale:
        return None  # not a smooth formula at that scale either
    factor = float(far @ expected) / float(expected @ expected)
    proportional = float((far - factor * expected).norm()) <= 0.1 * float(far.norm())
    return RoundedSlope(GRID_CELLS * 2 * grid, float((far - expected).norm()) / float(far.norm()),
                        factor if proportional else None)


def rounding_note(function: Callable[..., Any], inputs: tuple, names: list[str],
                  failing: dict[int, tuple[torch.Tensor, torch.Tensor]]) -> str:
    """For AGL901's message: the failing inputs in which forward rounds a smooth formula to a fine
    grid while backward is not that formula's derivative (``rounded_slope``). There forward's
    finite differences are zero, and "max |analytical - numerical|" alone reads as if the
    quantization were the complaint."""
    try:
        with torch.no_grad():
            base = _outputs(function, inputs)
    except Exception:  # forward's own failure is reported elsewhere; the note is only an aid
        return ""
    notes = []
    for index, (analytical, numerical) in sorted(failing.items()):
        flat = not numerical.numel() or float(numerical.abs().max()) <= ZERO
        if not bool(analytical.any()) or not (flat or _jumps_only(analytical, numerical)):
            continue
        slope = rounded_slope(function, inputs, index, analytical, base)
        if slope is not None and slope.differs:
            how = f"is {slope.factor:.3g} times" if slope.factor is not None else f"differs by {slope.error:.0%} from"
            notes.append(f"; forward rounds a smooth formula to a fine grid in {_name(index, names)}, and over steps "
                         f"of many grid cells (±{slope.step:.2g}) its slope {how} backward's gradient: backward is "
                         "not the derivative of the formula forward rounds")
    return "".join(notes)


def _flat_moved(function: Callable[..., Any], inputs: tuple, index: int, value: torch.Tensor
                ) -> Optional[torch.Tensor]:
    """Forward's outputs, flattened into one vector, with input ``index`` set to ``value``."""
    arguments = list(inputs)
    arguments[index] = value.clone().requires_grad_(True)
    with torch.no_grad():
        try:
            outputs = _outputs(function, tuple(arguments))
        except Exception:
            return None
    return torch.cat([output.reshape(-1) for output in outputs]) if outputs else None


def gradient_token(cls: type, function: Callable[..., Any], inputs: tuple, base: list[torch.Tensor]) -> str:
    """The words of the class's own text that say it is a gradient token ("token", "inject",
    "route"), when no float input moves forward's outputs, by a small step or a large one; ""
    otherwise. Such a forward returns zeros (or a constant) and backward sends a gradient: a
    token added to a loss or an output to inject one. Without the words, the same numbers are a
    forward that returns zeros by mistake (AGL901); the module's text is not read, since it may
    describe another class."""
    floats = [index for index, value in enumerate(inputs)
              if isinstance(value, torch.Tensor) and value.is_floating_point()]
    if not floats or any(_changes_output(function, inputs, index, base) or not _flat_near(function, inputs, index, base)
                         for index in floats):
        return ""
    return _documented_as(cls, TOKEN_HINT)


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


# A sentence of the class's docstrings that says its gradient differs from the derivative on
# purpose: "this mismatch is correct by design: the smooth gradient is the appropriate object".
# ("gradcheck fails ..." alone is not enough: docstrings also say when and why it fails for a bug.)
# A natural gradient is by definition not the derivative: the gradient preconditioned by the
# inverse Fisher information (natural gradient descent on a variational distribution).
_ON_PURPOSE = re.compile(r"\bby design\b|\bintentional\w*|\bon purpose\b|\bdeliberate\w*|\bnatural gradient",
                         re.IGNORECASE)
_ABOUT_GRADIENTS = re.compile(r"gradient|derivative|gradcheck|mismatch|backward", re.IGNORECASE)


def documented_mismatch(cls: type) -> str:
    """The words in which the class's docstrings (its own, forward's, backward's) say that its
    gradient differs from the derivative by design (on purpose, intentionally); "" when they do
    not. Comments are not read: they often explain one input's case, not the class's. Words
    alone never make a failure by design (no number checks them): AGL901 becomes a warning that
    quotes them."""
    documents = (inspect.getdoc(cls), inspect.getdoc(getattr(cls, "forward", None)),
                 inspect.getdoc(getattr(cls, "backward", None)))
    for document in filter(None, documents):
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(document.split())):
            if _ON_PURPOSE.search(sentence) and _ABOUT_GRADIENTS.search(sentence):
                return sentence.strip()[:MAX_QUOTED]
    return ""


MAX_QUOTED = 160


def _documented_as(cls: type, pattern: re.Pattern) -> str:
    """The words of the class's documentation that ``pattern`` meets first (``straight-through``)."""
    return _words(pattern, _source_text(cls))


def _words(pattern: re.Pattern, text: str) -> str:
    found = pattern.search(text)
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
        return MODIFIER
    if floats and all(_flat_near(function, inputs, index, outputs) and _changes_output(function, inputs, index, outputs)
                      for index in floats):
        return ESTIMATOR
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
