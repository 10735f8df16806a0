"""AGL205 saved-count-mismatch: saved_tensors unpacked into a different number of names than were saved."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding
from autograd_lint.rules._common import plural

CODE = "AGL205"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward, saved = model.own("backward"), model.saved_count
        if backward is None or saved is None:
            continue
        for node in backward.nodes:
            if not isinstance(node, cst.Assign) or not model.is_saved_tensors(node.value, backward):
                continue
            for target in node.targets:
                names = target.target
                if not isinstance(names, (cst.Tuple, cst.List)):
                    continue
                if any(isinstance(e, cst.StarredElement) for e in names.elements):
                    continue
                if len(names.elements) != saved:
                    yield module.at(
                        CODE, model, backward, node,
                        f"unpacks ctx.saved_tensors into {plural(len(names.elements), 'name')} but "
                        f"save_for_backward saves {plural(saved, 'tensor')}: the unpacking raises ValueError in backward",
                    )
