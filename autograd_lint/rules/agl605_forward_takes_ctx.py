"""AGL605 forward-takes-ctx: forward takes ctx and the class has no setup_context, so the
torch.func transforms (vmap, grad, jvp, vjp, jacrev) refuse the Function."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL605"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        forward = model.own("forward")
        if forward is None or not forward.is_static or not forward.params or model.style != "legacy":
            continue
        if not any(name in model.methods for name in ("backward", "vjp", "jvp")):
            continue  # no derivative: a namespace for a plain function (`f = MyFn.forward`), or AGL105's
        if any(p.name == "ctx" for p in forward.params[1:]):
            continue  # `forward(cls, ctx, ...)`: a helper that subclasses call, not what apply calls
        if model.unknown_base and model.inherited_from_project is None:
            continue  # a base in another file may define setup_context
        vmap_rule = "vmap" in model.class_helpers or model.generate_vmap_rule_true is not None
        yield module.at_def(
            CODE, model, forward,
            f"forward takes {forward.params[0].name} and {model.name} has no setup_context: "
            "torch.func.vmap/grad/jvp/vjp over it raise RuntimeError (\"it must override the setup_context "
            "staticmethod\")" + ("; its vmap rule is never used" if vmap_rule else "")
            + "; take only the inputs in forward and fill ctx in setup_context(ctx, inputs, output)",
        )
