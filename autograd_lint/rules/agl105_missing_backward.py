"""AGL105 missing-backward: forward defined but neither backward nor vjp."""

from __future__ import annotations

import re
from typing import Iterator, Optional

from autograd_lint.analysis.class_model import FunctionModel
from autograd_lint.analysis.intent import inference_only_marker
from autograd_lint.analysis.non_differentiable import index_named_outputs
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding
from autograd_lint.rules._common import all_outputs_non_differentiable, raises_only

CODE = "AGL105"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    local_bases = {base for info in module.index.classes for base in info.bases}
    for model in module.classes:
        forward = model.forward
        if forward is None or raises_only(forward):
            continue
        if model.unknown_base and model.inherited_from_project is None:
            continue  # a base in another file that we cannot see fully
        if model.info.mixin_methods is None:
            continue  # a plain base we cannot see may define backward
        inherited = model.inherited_from_project[0] if model.inherited_from_project else set()
        members = _members_with_bases(model) | inherited
        if any(model.method(n) or n in members for n in ("backward", "vjp")):
            continue
        if module.key_of(model) in module.project.subclassed_keys or model.name in local_bases:
            continue  # a base class: its subclasses provide backward
        if "symbolic" in members:
            continue  # an ONNX export stub: `symbolic` is all it is for
        if _is_namespace(model, module):
            continue
        if all_outputs_non_differentiable(model):
            continue  # integer indices, marked or non-tensor outputs: no gradient can reach it
        indices = index_named_outputs(model)
        if indices:
            yield module.at_class(
                CODE, model,
                f"{model.name} defines forward but no backward (or vjp); its outputs look like "
                f"indices ({', '.join(indices)}), which never get a gradient if they are integer "
                f"tensors, but their dtype could not be read: if one is a float tensor that needs a "
                f"gradient, backward raises 'You must implement either the backward or vjp method'",
                severity="info",
            )
            continue
        marker = inference_only_marker(model)
        if marker is not None:
            yield module.at_class(
                CODE, model,
                f"{model.name} defines forward but no backward (or vjp); its forward runs under "
                f"{marker}, so it looks meant for inference only: if a caller ever differentiates "
                f"through it, backward raises 'You must implement either the backward or vjp method'",
                severity="info",
            )
            continue
        need = _gradient_needed(module, model)
        if need is None:
            # No caller is seen to need the gradient: an inference or serving op (a KV-cache
            # write, a fused kernel for serving) is written just so, and one that someone does
            # differentiate fails loudly at its first backward.
            yield module.at_class(
                CODE, model,
                f"{model.name} defines forward but no backward (or vjp); no caller in the project is "
                f"seen to need its gradient (a trainable parameter passed to apply, a gradcheck), so it "
                f"may be meant for inference only: if a caller differentiates through it, backward "
                f"raises 'You must implement either the backward or vjp method'",
                severity="info",
            )
            continue
        yield module.at_class(
            CODE, model,
            f"{model.name} defines forward but no backward (or vjp), and {need}: backward through it "
            f"raises 'You must implement either the backward or vjp method'",
        )


def _gradient_needed(module: ModuleAnalysis, model: FunctionModel) -> Optional[str]:
    """What shows that a caller needs this Function's gradient, in words; None when nothing
    does: a gradcheck of the class, or a trainable parameter its file passes to ``apply``."""
    if module.key_of(model) in module.project.gradchecked_keys:
        return "a gradcheck in the project differentiates it"
    trainable = module.trainable_arguments
    if not trainable.might_train():
        return None
    for position in range(len(model.known_inputs)):
        found = trainable.at(model.name, position)
        if found is not None:
            return f"the caller passes {found.shown}, a trainable parameter"
    return None


# Names real code gives forward's ctx parameter.
_CTX_NAME = re.compile(r"^_*(ctx|cxt|context|self)\w*$")


def _is_namespace(model: FunctionModel, module: ModuleAnalysis) -> bool:
    """A class used only as a namespace for static functions: its forward takes no ctx (no
    setup_context either) and no linted code applies it, so backward is never needed."""
    forward = model.forward
    if forward is None or model.style != "legacy" or forward.star_args is not None:
        return False
    if forward.params and _CTX_NAME.match(forward.params[0].name):
        return False
    if model.name in module.project.apply_arg_counts:
        return False
    return re.search(rf"\b{re.escape(model.name)}\.apply\b", module.text) is None


def _members_with_bases(model: FunctionModel) -> set[str]:
    """Members of the class, its Function bases in this file and the plain bases that come
    before them (``class Spike(BackwardMixin, Function)``), including those bound in the class
    body by assignment or after it (``MyFn.backward = staticmethod(_backward)``)."""
    members = set(model.info.methods) | (model.info.mixin_methods or set())
    for base in model.bases:
        members |= _members_with_bases(base)
    return members
