"""The rule catalogue: one row per code, the single source of every property of a rule.

Codes are a public contract (see rules/ and the README): never renumber or reuse one.
The analysis in ``autograd_lint.rules`` implements them; this module only describes them, so
the CLI, the reporters, ``--explain`` and the fixer's option parsing can use it without loading
any analysis code. It imports nothing but the standard library: keep it that way.

Everything else that lists codes is derived from these rows: the rule modules
(``autograd_lint.rules``, found by ``RuleInfo.rule_module``), ``fix.options.FIXABLE_CODES``,
``fix.context.WHOLE_MODULE_CODES``, ``dynamic.confirm.CONFIRMABLE_CODES`` and
``SHOWN_BY_A_RAISING_FORWARD``, ``flake8_plugin.PROJECT_WIDE_CODES`` and the README's rule and
fix tables. ``tests/test_catalogue.py`` checks that every flag has its implementation (a fixer
in ``fix.registry.FIXERS``, a confirmer in ``dynamic.confirmers.CONFIRMERS``, a page section).
CONTRIBUTING.md says how to add a rule.
"""

from __future__ import annotations

PARSE_ERROR = "AGL000"  # reported by the engine itself when a file cannot be read or parsed
# Reported by the pipeline from the other rules' findings (``suppression.suppression_problems``).
UNUSED_SUPPRESSION = "AGL001"


class RuleInfo:
    """One row: ``RuleInfo(code, name, severity, summary, **options)``, each option one of the
    class attributes below (their values are the defaults).

    A plain class rather than a dataclass: every run of the CLI imports the catalogue, and
    ``dataclasses`` (which imports ``inspect``) with the class it builds cost about a fifth of
    that import. A row is read, never changed.
    """

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
    # --dynamic can confirm or refute a finding by running the Function (a confirmer in
    # ``dynamic.confirmers``; the page's "How --dynamic confirms it" says how).
    confirmable: bool = False
    # The evidence is an exception forward itself raises (or, for AGL104, one raised before
    # forward runs), so a candidate input on which forward raises can confirm it; every other
    # confirmable rule needs a forward that runs.
    confirmed_when_forward_raises: bool = False
    # The question spans the project (which Functions some gradcheck reaches): linting a lone
    # file would give a wrong answer, not a partial one, so the flake8 plugin leaves it out.
    project_wide: bool = False
    # What ``--fix`` does, as the README's fix table says it; empty when there is no fixer.
    fix: str = ""
    # "safe", "unsafe", or "safe; unsafe when ...": the page's "Fix safety" section explains it.
    fix_safety: str = ""
    # The fixer looks outside the Function class of the finding (call sites, gradcheck inputs),
    # so its findings get the whole module's libcst tree rather than the class's (fix/context.py).
    fix_reads_whole_module: bool = False
    # The module of ``autograd_lint.fix`` whose ``fix`` rewrites this code, when it is not the
    # code's own (``fix/agl101.py`` for AGL101): set where several codes share one rewrite.
    fixer: str = ""
    # The runtime failures (--dynamic) that this rule's bug causes on the same class: once a
    # finding is confirmed, they are merged into it rather than reported again
    # (``dynamic/dedupe.py``). "AGL903:<kind>" names one kind of AGL903's problems ("count",
    # "shape", "dtype", "device", "type"), as AGL903 reports several at once; "AGL905:<kind>"
    # one of AGL905's ("values", "raises").
    explains: tuple[str, ...] = ()
    # Codes whose finding on the same line already says what this rule would: this rule's
    # finding there is dropped, so one problem is reported once (a `.data` write on an input is
    # AGL303's, which names the input and says the write is unseen; AGL304 adds nothing).
    restated_by: tuple[str, ...] = ()
    # The methods whose interface (what autograd hands them, what they give back, what a
    # wrapper may add to ctx) this rule's error rests on: when one of them carries a decorator
    # the model cannot read, the error is reported as a warning that names it
    # (``analysis.certainty``: an unknown never makes an error).
    rests_on: tuple[str, ...] = ()

    def __init__(self, code: str, name: str, severity: str, summary: str, **options: object) -> None:
        self.code, self.name, self.severity, self.summary = code, name, severity, summary
        for option, value in options.items():
            if option not in _OPTIONS:
                raise TypeError(f"RuleInfo() got an unexpected keyword argument {option!r}")
            setattr(self, option, value)

    def __repr__(self) -> str:
        return f"RuleInfo({self.code!r}, {self.name!r}, {self.severity!r}, ...)"

    @property
    def severity_text(self) -> str:
        """The severity as the README table, the rule page and ``--explain`` show it."""
        return self.graded or self.severity

    @property
    def fixable(self) -> bool:
        return bool(self.fix)

    @property
    def fix_module(self) -> str:
        """The fixer's module in ``autograd_lint.fix``: ``agl101`` for AGL101, unless ``fixer`` says."""
        return self.fixer or self.code.lower()

    @property
    def python_name(self) -> str:
        """The name as a Python identifier (``backward_return_count``): the rule module's name
        after the code, and the name of the confirmer function in ``dynamic.confirmers``."""
        return self.name.replace("-", "_")

    @property
    def has_rule_module(self) -> bool:
        """Checked by a module of ``autograd_lint.rules`` (not AGL000 or AGL001, which the pipeline
        reports, not the runtime codes)."""
        return self.static and self.code not in (PARSE_ERROR, UNUSED_SUPPRESSION)

    @property
    def rule_module(self) -> str:
        """The rule module's name: ``agl101_backward_return_count`` for AGL101 backward-return-count."""
        return f"{self.code.lower()}_{self.python_name}"


# The keyword options of a row: the annotated class attributes after the four positional fields.
_OPTIONS = frozenset(RuleInfo.__annotations__) - {"code", "name", "severity", "summary"}

RULES: dict[str, RuleInfo] = {
    info.code: info
    for info in [
        RuleInfo("AGL000", "parse-error", "error", "the file could not be read or parsed"),
        RuleInfo("AGL001", "unused-suppression", "warning",
                 "a suppression comment that does nothing: an AGL code no finding meets, an unknown code, "
                 "a disable comment off the class line, a malformed directive",
                 fix="remove the unused codes (the whole comment when none is left)", fix_safety="safe",
                 fix_reads_whole_module=True),
        RuleInfo("AGL002", "unseen-function-base", "info",
                 "a class derives from a base the run cannot see (a relative import in a text of no package: "
                 "stdin without --stdin-filename, a file copied alone), so it is not checked"),
        RuleInfo("AGL101", "backward-return-count", "error",
                 "backward returns a different number of gradients than forward has inputs",
                 confirmable=True, explains=("AGL901", "AGL903:count"),
                 fix="append `None`s for missing non-tensor inputs",
                 fix_safety="safe; unsafe when an input may be a tensor",
                 rests_on=("forward", "backward")),
        RuleInfo("AGL102", "backward-grad-arg-count", "error",
                 "backward takes a different number of gradient parameters than forward returns outputs",
                 confirmable=True, explains=("AGL901",),
                 rests_on=("forward", "backward")),
        RuleInfo("AGL103", "missing-staticmethod", "warning",
                 "forward/backward/setup_context/jvp/vjp defined without @staticmethod",
                 graded="warning / error (state set in __init__)",
                 fix="add `@staticmethod`",
                 fix_safety="safe"),
        RuleInfo("AGL104", "function-instantiated", "error",
                 "a Function class instantiated or called directly instead of MyFn.apply(...)",
                 confirmable=True, confirmed_when_forward_raises=True,
                 fix="`MyFn()(x)` -> `MyFn.apply(x)`",
                 fix_safety="safe", fix_reads_whole_module=True),
        RuleInfo("AGL105", "missing-backward", "warning",
                 "a Function class defines forward but neither backward nor vjp",
                 graded="warning (a caller needs its gradient) / info (no caller seen to, inference-only by design, or outputs named like indices)",
                 confirmable=True),
        RuleInfo("AGL106", "setup-context-mismatch", "error",
                 "setup_context defined while forward takes ctx, or with the wrong signature",
                 confirmable=True, confirmed_when_forward_raises=True,
                 rests_on=("forward", "setup_context")),
        RuleInfo("AGL107", "stub-derivative", "warning",
                 "backward/jvp/vjp is a stub (pass, ..., docstring or return None)",
                 confirmable=True, explains=("AGL901",)),
        RuleInfo("AGL108", "grad-output-ignored", "error",
                 "backward returns a gradient without reading any gradient parameter",
                 confirmable=True, explains=("AGL901",),
                 rests_on=("backward",)),
        RuleInfo("AGL201", "ctx-tensor-attribute", "error",
                 "forward's output, or an input that gets a gradient and whose values backward reads, "
                 "kept as a ctx attribute instead of with save_for_backward",
                 confirmable=True,
                 fix="`ctx.x = x` -> `ctx.save_for_backward(x)`, "
                     "and `ctx.x` in backward -> `x` from `ctx.saved_tensors`",
                 fix_safety="unsafe",
                 rests_on=("forward", "setup_context")),
        RuleInfo("AGL202", "save-non-tensor", "error",
                 "save_for_backward given something that is not a tensor or None",
                 confirmable=True, confirmed_when_forward_raises=True,
                 fix="non-tensor out of `save_for_backward` into `ctx.<name>`; backward reads it from there",
                 fix_safety="unsafe"),
        RuleInfo("AGL203", "saved-tensors-in-forward", "error",
                 "ctx.saved_tensors read inside forward or setup_context",
                 confirmable=True, confirmed_when_forward_raises=True),
        RuleInfo("AGL204", "save-twice", "warning",
                 "save_for_backward called more than once on one path: only the last call is kept",
                 confirmable=True, explains=("AGL901",)),
        RuleInfo("AGL205", "saved-count-mismatch", "error",
                 "ctx.saved_tensors unpacked into a different number of names than were saved",
                 confirmable=True, explains=("AGL901",)),
        RuleInfo("AGL206", "ctx-attr-undefined", "error",
                 "backward reads a ctx attribute that forward/setup_context never sets",
                 graded="error / warning (a private name torch's ctx may provide)",
                 confirmable=True, explains=("AGL901",),
                 rests_on=("forward", "setup_context", "backward")),
        RuleInfo("AGL207", "ctx-tensor-bypasses-hooks", "warning",
                 "another tensor kept as a ctx attribute: saved-tensor hooks and torch.func do not see it",
                 default_enabled=False,
                 confirmable=True,
                 fix="`ctx.x = x` -> `ctx.save_for_backward(x)`, "
                     "and `ctx.x` in backward -> `x` from `ctx.saved_tensors`",
                 fix_safety="unsafe", fixer="agl201"),
        RuleInfo("AGL301", "inplace-grad-output", "error",
                 "in-place operation on a gradient parameter of backward",
                 confirmable=True, explains=("AGL902", "AGL905"),
                 fix="`g = g.clone()` before the first in-place write",
                 fix_safety="safe", fixer="clone",
                 rests_on=("backward",)),
        RuleInfo("AGL302", "inplace-saved-tensor", "error",
                 "in-place operation on a saved tensor inside backward",
                 confirmable=True, explains=("AGL901",),
                 fix="`g = g.clone()` before the first in-place write",
                 fix_safety="safe", fixer="clone"),
        RuleInfo("AGL303", "inplace-input-no-mark-dirty", "error",
                 "in-place operation on a forward input without ctx.mark_dirty",
                 confirmable=True, explains=("AGL901",),
                 rests_on=("forward",)),
        RuleInfo("AGL304", "dot-data", "warning",
                 "a write through .data (unseen by the version counter), or a .data read that breaks "
                 "double backward or detaches what backward reads",
                 graded="error (write) / warning (read, or a rebound scratch write)",
                 confirmable=True, explains=("AGL902",), restated_by=("AGL301", "AGL302", "AGL303"),
                 fix="`.data` read -> `.detach()` (in `backward`: plain `x`, which keeps double backward)",
                 fix_safety="unsafe",
                 rests_on=("forward",)),
        RuleInfo("AGL305", "backward-not-differentiable", "info",
                 "backward leaves autograd without @once_differentiable", default_enabled=False,
                 confirmable=True, explains=("AGL902",)),
        RuleInfo("AGL306", "undefined-grad-arithmetic", "error",
                 "with ctx.set_materialize_grads(False), backward computes with a gradient it never checks for None",
                 confirmable=True, explains=("AGL907",),
                 rests_on=("backward",)),
        RuleInfo("AGL307", "input-returned-without-mark-dirty", "warning",
                 "forward returns an input, or a view of it, without ctx.mark_dirty: an in-place op on that output raises far away",
                 default_enabled=False, confirmable=True,
                 rests_on=("forward",)),
        RuleInfo("AGL308", "gradient-dropped", "error",
                 "backward returns None for a trainable nn.Parameter that forward's output depends on through "
                 "plain arithmetic: it silently never trains",
                 confirmable=True, explains=("AGL901",),
                 rests_on=("backward",)),
        RuleInfo("AGL401", "needs-input-grad-unchecked", "warning",
                 "a costly gradient computed without a ctx.needs_input_grad guard",
                 confirmable=True),
        RuleInfo("AGL402", "factory-without-dtype-device", "warning",
                 "tensor factory in backward without dtype= or device=",
                 confirmable=True, explains=("AGL901", "AGL903:dtype", "AGL903:device"),
                 fix="`torch.zeros(...)` -> `grad.new_zeros(...)`, or `dtype=`/`device=` from the gradient",
                 fix_safety="safe"),
        RuleInfo("AGL403", "strided-grad-to-kernel", "warning",
                 "backward hands a gradient, maybe non-contiguous, to a custom kernel (Triton launch, "
                 "data_ptr, compiled extension, custom op) without .contiguous()",
                 graded="error (Triton launch without its strides, data_ptr) / warning (extension, custom op)",
                 confirmable=True, explains=("AGL905",),
                 rests_on=("backward",)),
        RuleInfo("AGL404", "numpy-gradient-device", "warning",
                 "backward returns a gradient made from NumPy (torch.from_numpy/as_tensor) without moving it to the gradient's device"),
        RuleInfo("AGL501", "gradcheck-float32", "warning",
                 "gradcheck/gradgradcheck called on inputs that are not float64",
                 fix="`dtype=torch.double` for gradcheck inputs",
                 fix_safety="safe; unsafe when the tensor is reused", fix_reads_whole_module=True),
        RuleInfo("AGL502", "function-not-gradchecked", "info",
                 "a Function class that no gradcheck/gradgradcheck call reaches", default_enabled=False,
                 project_wide=True),
        RuleInfo("AGL601", "vmap-rule-conflict", "error",
                 "generate_vmap_rule = True and a vmap staticmethod in one class: torch.func.vmap refuses it",
                 confirmable=True,
                 rests_on=("forward", "setup_context")),
        RuleInfo("AGL602", "jvp-without-save-for-forward", "error",
                 "jvp reads ctx.saved_tensors, which forward never filled with ctx.save_for_forward",
                 confirmable=True,
                 rests_on=("forward", "setup_context", "jvp")),
        RuleInfo("AGL603", "autocast-decorator-mismatch", "warning",
                 "@custom_fwd on forward without @custom_bwd on backward, or the reverse",
                 graded="error (custom_bwd alone) / warning (custom_fwd alone)",
                 confirmable=True, explains=("AGL901", "AGL906"),
                 rests_on=("forward", "backward")),
        RuleInfo("AGL604", "deprecated-amp-decorator", "warning",
                 "torch.cuda.amp.custom_fwd/custom_bwd, deprecated for torch.amp.custom_fwd(device_type=...)",
                 fix="`@torch.cuda.amp.custom_fwd(...)` -> `@torch.amp.custom_fwd(device_type=\"cuda\", ...)`",
                 fix_safety="unsafe"),
        RuleInfo("AGL605", "forward-takes-ctx", "info",
                 "forward takes ctx and there is no setup_context: torch.func transforms (vmap, grad, jvp) refuse the Function",
                 default_enabled=False, confirmable=True, confirmed_when_forward_raises=True),
        RuleInfo("AGL606", "captured-tensor", "warning",
                 "a Function class nested in a function reads, in forward, a tensor of the enclosing function "
                 "instead of taking it as an input",
                 confirmable=True),
        RuleInfo("AGL901", "gradcheck-failed", "error", "gradcheck failed (--dynamic)", static=False,
                 graded="error / warning (inputs with guessed constant tensors)"),
        RuleInfo("AGL902", "gradgradcheck-failed", "error", "gradgradcheck failed (--dynamic)", static=False,
                 graded="error / warning (inputs with guessed constant tensors)"),
        RuleInfo("AGL903", "backward-wrong-result", "error",
                 "backward returned a wrong count, shape, dtype or device at runtime (--dynamic)", static=False),
        RuleInfo("AGL904", "cuda-only-failure", "error",
                 "passes on CPU but fails on CUDA (--dynamic)", static=False),
        RuleInfo("AGL905", "strided-gradient-mismatch", "error",
                 "backward gives other gradients, or raises, when a gradient arrives non-contiguous (--dynamic)",
                 static=False),
        RuleInfo("AGL906", "autocast-failure", "error",
                 "forward under autocast, or backward after it, raises where the same calls in float32 run "
                 "(--dynamic)", static=False,
                 graded="error (the Function has @custom_fwd/@custom_bwd) / warning (it has neither)"),
        RuleInfo("AGL907", "undefined-gradient-failure", "error",
                 "backward raises when an unused output's gradient is None (set_materialize_grads(False); "
                 "--dynamic)", static=False),
        RuleInfo("AGL908", "surrogate-gradient", "info",
                 "backward is deliberately not forward's derivative: a straight-through or surrogate estimator "
                 "(and its fixed hyper-parameters), a gradient modifier over an identity forward, a Lie group's "
                 "tangent-space gradient, a natural gradient, a fixed-point forward with the real-valued "
                 "formula's backward, or a gradient token (--dynamic)",
                 default_enabled=False, static=False),
        RuleInfo("AGL909", "backward-not-linear", "error",
                 "backward is not linear in its incoming gradient: it clamps or gates on the gradient's sign, "
                 "which gradcheck's non-negative probes miss (--dynamic)", static=False),
    ]
}
