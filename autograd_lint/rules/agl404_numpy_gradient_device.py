"""AGL404 numpy-gradient-device (placeholder while written)."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL404"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    return iter(())
