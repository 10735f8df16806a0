"""The rule catalogue: every code's name, severity and default selection.

Codes are a public contract (see rules/ and the README): never renumber or reuse one.
The analysis in ``autograd_lint.rules`` implements them; this module only describes them, so
the CLI, the reporters and ``--explain`` can use it without loading any analysis code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    severity: str  # "error" | "warning" | "info"
    summary: str
    default_enabled: bool = True
    static: bool = True  # False for the AGL9xx runtime findings of --dynamic
    # For a rule whose findings carry their own severity by harm (``Finding.level``): how the
    # catalogue shows it, e.g. "error (write) / warning (read)". ``severity`` is then the level
    # of a finding that carries none, and SARIF's default for the rule.
    graded: str = ""

    @property
    def severity_text(self) -> str:
        """The severity as the README table, the rule page and ``--explain`` show it."""
        return self.graded or self.severity


RULES: dict[str, RuleInfo] = {
    info.code: info
    for info in [
        RuleInfo("AGL000", "parse-error", "error", "the file could not be read or parsed"),
        RuleInfo("AGL101", "backward-return-count", "error",
                 "backward returns a different number of gradients than forward has inputs"),
        RuleInfo("AGL102", "backward-grad-arg-count", "error",
                 "backward takes a different number of gradient parameters than forward returns outputs"),
        RuleInfo("AGL103", "missing-staticmethod", "warning",
                 "forward/backward/setup_context/jvp/vjp defined without @staticmethod"),
        RuleInfo("AGL104", "function-instantiated", "error",
                 "a Function class instantiated or called directly instead of MyFn.apply(...)"),
        RuleInfo("AGL105", "missing-backward", "warning",
                 "a Function class defines forward but neither backward nor vjp"),
        RuleInfo("AGL106", "setup-context-mismatch", "error",
                 "setup_context defined while forward takes ctx, or with the wrong signature"),
        RuleInfo("AGL107", "stub-derivative", "warning",
                 "backward/jvp/vjp is a stub (pass, ..., docstring or return None)"),
        RuleInfo("AGL108", "grad-output-ignored", "error",
                 "backward returns a gradient without reading any gradient parameter"),
        RuleInfo("AGL201", "ctx-tensor-attribute", "error",
                 "forward's output, or an input that gets a gradient or whose values backward reads, "
                 "kept as a ctx attribute instead of with save_for_backward"),
        RuleInfo("AGL202", "save-non-tensor", "error",
                 "save_for_backward given something that is not a tensor or None"),
        RuleInfo("AGL203", "saved-tensors-in-forward", "error",
                 "ctx.saved_tensors read inside forward or setup_context"),
        RuleInfo("AGL204", "save-twice", "warning",
                 "save_for_backward called more than once on one path: only the last call is kept"),
        RuleInfo("AGL205", "saved-count-mismatch", "error",
                 "ctx.saved_tensors unpacked into a different number of names than were saved"),
        RuleInfo("AGL206", "ctx-attr-undefined", "error",
                 "backward reads a ctx attribute that forward/setup_context never sets"),
        RuleInfo("AGL207", "ctx-tensor-bypasses-hooks", "warning",
                 "another tensor kept as a ctx attribute: saved-tensor hooks and torch.func do not see it",
                 default_enabled=False),
        RuleInfo("AGL301", "inplace-grad-output", "error",
                 "in-place operation on a gradient parameter of backward"),
        RuleInfo("AGL302", "inplace-saved-tensor", "error",
                 "in-place operation on a saved tensor inside backward"),
        RuleInfo("AGL303", "inplace-input-no-mark-dirty", "error",
                 "in-place operation on a forward input without ctx.mark_dirty"),
        RuleInfo("AGL304", "dot-data", "warning",
                 "a write through .data (unseen by the version counter), or a .data read that breaks "
                 "double backward or detaches what backward reads", graded="error (write) / warning (read)"),
        RuleInfo("AGL305", "backward-not-differentiable", "info",
                 "backward leaves autograd without @once_differentiable", default_enabled=False),
        RuleInfo("AGL306", "undefined-grad-arithmetic", "error",
                 "with ctx.set_materialize_grads(False), backward computes with a gradient it never checks for None"),
        RuleInfo("AGL401", "needs-input-grad-unchecked", "warning",
                 "a costly gradient computed without a ctx.needs_input_grad guard"),
        RuleInfo("AGL402", "factory-without-dtype-device", "warning",
                 "tensor factory in backward without dtype= or device="),
        RuleInfo("AGL501", "gradcheck-float32", "warning",
                 "gradcheck/gradgradcheck called on inputs that are not float64"),
        RuleInfo("AGL502", "function-not-gradchecked", "info",
                 "a Function class that no gradcheck/gradgradcheck call reaches", default_enabled=False),
        RuleInfo("AGL601", "vmap-rule-conflict", "error",
                 "generate_vmap_rule = True and a vmap staticmethod in one class: torch.func.vmap refuses it"),
        RuleInfo("AGL602", "jvp-without-save-for-forward", "error",
                 "jvp reads ctx.saved_tensors, which forward never filled with ctx.save_for_forward"),
        RuleInfo("AGL603", "autocast-decorator-mismatch", "warning",
                 "@custom_fwd on forward without @custom_bwd on backward, or the reverse",
                 graded="error (custom_bwd alone) / warning (custom_fwd alone)"),
        RuleInfo("AGL604", "deprecated-amp-decorator", "warning",
                 "torch.cuda.amp.custom_fwd/custom_bwd, deprecated for torch.amp.custom_fwd(device_type=...)"),
        RuleInfo("AGL901", "gradcheck-failed", "error", "gradcheck failed (--dynamic)", static=False),
        RuleInfo("AGL902", "gradgradcheck-failed", "error", "gradgradcheck failed (--dynamic)", static=False),
        RuleInfo("AGL903", "backward-wrong-result", "error",
                 "backward returned a wrong count, shape, dtype or device at runtime (--dynamic)", static=False),
        RuleInfo("AGL904", "cuda-only-failure", "error",
                 "passes on CPU but fails on CUDA (--dynamic)", static=False),
    ]
}
