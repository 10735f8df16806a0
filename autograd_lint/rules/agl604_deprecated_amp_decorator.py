"""AGL604 deprecated-amp-decorator: ``torch.cuda.amp.custom_fwd`` / ``custom_bwd``, deprecated
for ``torch.amp.custom_fwd(device_type="cuda")``."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.syntax import dotted
from autograd_lint.findings import Finding

CODE = "AGL604"
_DEPRECATED = {
    f"torch.cuda.amp{module}.{name}": name
    for module in ("", ".autocast_mode") for name in ("custom_fwd", "custom_bwd")
}


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        for name in ("forward", "backward"):
            method = model.own(name)
            if method is None:
                continue
            for decorator in method.node.decorators:
                expression = decorator.decorator
                target = expression.func if isinstance(expression, cst.Call) else expression
                written = dotted(target)
                replaced = _DEPRECATED.get(model.qualify(written)) if written else None
                if replaced is not None:
                    yield module.at(
                        CODE, model, method, decorator.decorator,
                        f"torch.cuda.amp.{replaced} is deprecated (a FutureWarning at import since "
                        f"torch 2.4, to be removed): use torch.amp.{replaced}(device_type=\"cuda\")",
                    )
