"""AGL302 inplace-saved-tensor: an in-place operation inside backward on a saved tensor that the
caller also holds (a forward input or output). A private buffer forward made and saved is the
memory-saving idiom of large-model losses: PyTorch's version check raises on a second backward,
so nothing is silent, and the rule says nothing."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.provenance import Origin
from autograd_lint.findings import Finding
from autograd_lint.rules._inplace import saved_tensor_writes_with_provenance, write_related

CODE = "AGL302"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        backward = model.own("backward")
        if backward is None:
            continue
        inputs = model.known_inputs
        for write, origin, saved_at in saved_tensor_writes_with_provenance(model, backward):
            if origin.origin is Origin.OUTPUT:
                whose = "forward's output"
            elif origin.origin is Origin.INPUT and origin.position is not None and origin.position < len(inputs):
                whose = f"forward input `{inputs[origin.position].name}`"
            else:
                continue  # a private buffer, or a tensor we cannot trace: nobody else sees the write
            yield module.at(
                CODE, model, backward, write.statement,
                f"in-place {write.described} on the saved tensor {write.name}, which is {whose}: it "
                f"silently changes a tensor the caller holds; work on a copy",
                related=write_related(module, write)
                + (module.related(*saved_at, f"{write.name} is saved here") if saved_at is not None else ()),
            )
