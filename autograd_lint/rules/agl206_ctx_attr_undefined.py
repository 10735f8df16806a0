"""AGL206 ctx-attr-undefined: backward reads a ctx attribute that forward/setup_context never set."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.ctx_api import CTX_MEMBERS
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import dotted, is_ctx_attr, positional_args
from autograd_lint.findings import Finding

CODE = "AGL206"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        defined = model.ctx_attributes_set
        if backward is None or defined is None:
            continue
        ctx_names = model.ctx_names(backward)
        guarded = _guarded_attributes(backward.nodes, ctx_names)
        if guarded is None:
            continue
        seen: set[tuple[str, int]] = set()
        for node in backward.nodes:
            if not is_ctx_attr(node, ctx_names):
                continue
            attr = node.attr.value
            if attr in defined or attr in CTX_MEMBERS or attr in guarded or attr.startswith("__"):
                continue
            if attr in module.project.grad_fn_attributes:  # set from outside: `y.grad_fn.attr = ...`
                continue
            if attr in model.instance_state:  # set by __init__ on an instance: AGL103's error
                continue
            # A private name torch's ctx classes may have in a version other than the one ctx_api
            # lists is an unknown: a warning at most.
            private = attr.startswith("_")
            finding = module.at(
                CODE, model, backward, node,
                f"backward reads ctx.{attr}, which forward/setup_context never set: AttributeError at backward"
                + (", unless the torch it runs on gives its ctx a private member of that name" if private else ""),
                severity="warning" if private else "",
            )
            if (attr, finding.line) not in seen:
                seen.add((attr, finding.line))
                yield finding


def _guarded_attributes(nodes, ctx_names) -> set[str] | None:
    """Attributes read through hasattr/getattr(ctx, "name"); None if ctx is probed dynamically."""
    guarded: set[str] = set()
    for node in nodes:
        if isinstance(node, cst.Call) and dotted(node.func) in ("hasattr", "getattr"):
            args = positional_args(node)
            if args and isinstance(args[0].value, cst.Name) and args[0].value.value in ctx_names:
                if len(args) >= 2 and isinstance(args[1].value, cst.SimpleString):
                    guarded.add(args[1].value.evaluated_value)
                else:
                    return None
    return guarded
