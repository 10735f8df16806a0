"""Is a finding certain? The facet of the model that knows what it could not read.

The model reads a Function class's own code. Some facts a rule concludes from pass through code
it cannot read: a decorator between autograd and ``backward`` may copy the gradients, fill in
the missing ones or change what backward returns; one on ``forward`` may copy its inputs or set
ctx attributes of its own. The invariant (docs/architecture.md): **an unknown never makes an
error**. A finding at error severity may rest only on facts read from code; where its reasoning
passes through something unread, it is reported as a warning whose message names what could
not be read.

Each rule says, in its catalogue row (``RuleInfo.rests_on``), which methods' interfaces its
error rests on; ``ModuleAnalysis`` asks this facet before it reports an error, so a rule never
has to remember to. What a decorator does is ``analysis.decorators``'s to say; this module only
asks it, method by method.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Iterable, Optional

from autograd_lint.analysis.decorators import CONTIGUOUS, LIBRARY, UNKNOWN

if TYPE_CHECKING:
    from autograd_lint.analysis.class_model import FunctionModel, Method

# Decorators that are the model's own business: they say how the method is bound.
_STRUCTURAL = frozenset({"staticmethod", "classmethod"})


class Certainty:
    """What the model of one Function class could not read, method by method."""

    def __init__(self, model: "FunctionModel") -> None:
        self.model = model

    def effects(self, method: "Method") -> list[tuple[str, str]]:
        """(decorator as written, its effect) for each decorator of ``method`` but the
        structural ones, outermost first."""
        return [(written, self._effect(written)) for written in method.decorator_names
                if written not in _STRUCTURAL]

    def unreadable(self, method: "Method") -> list[str]:
        """The decorators of ``method`` whose effect the model cannot read."""
        return [written or "<expression>" for written, effect in self.effects(method) if effect == UNKNOWN]

    def makes_contiguous(self, method: "Method") -> bool:
        """Does a decorator of ``method`` hand its tensor arguments to the body contiguous? Read
        from its code, or, for one the model cannot read, said by its name (liger's and
        unsloth's ``@ensure_contiguous``, used from outside the linted project)."""
        return any(effect == CONTIGUOUS or (effect == UNKNOWN and "contiguous" in written.lower())
                   for written, effect in self.effects(method))

    def doubt(self, method_names: Iterable[str]) -> Optional[str]:
        """Why a conclusion about these methods' interfaces is not certain, or None when it is:
        the first unreadable decorator among them, in words for a message."""
        for name in method_names:
            method = self.model.method(name)
            if method is None:
                continue
            unread = self.unreadable(method)
            if unread:
                return f"{name} is wrapped by @{unread[0]}, which autograd-lint cannot read"
        return None

    @cached_property
    def unreached(self) -> bool:
        """Is the class one that nothing of the project can call: in a private module, applied,
        subclassed, gradchecked and called by no code (``ProjectFacts.unreached_keys``)? A class
        written to be instantiated (forward not static) is called as ``MyFn()``, which the
        facts do not look for: never unreached."""
        project, forward = self.model.project, self.model.forward
        return (project is not None and self.model.key in project.unreached_keys
                and forward is not None and (forward.is_static or forward.is_classmethod))

    @cached_property
    def _module(self) -> str:
        return self.model.key.rpartition(".")[0]

    def _effect(self, written: str) -> str:
        if not written:
            return UNKNOWN
        qualified = self.model.qualify(written)
        if qualified in LIBRARY:
            return LIBRARY[qualified]
        project = self.model.project
        if project is None:
            return UNKNOWN
        return project.decorator_effects.get(f"{self._module}:{written}", UNKNOWN)
