"""Objects of the package's own classes, built from their constructors, for ``--dynamic``'s input search.

Two places need one: a parameter whose annotation names a class of the package (``system:
ChargeSystem``, ``config: SolveConfig``, a mode ``Enum``), which no tensor can stand in for; and a
caller of ``apply`` that is a method (``KirchhoffOperator(...).adjoint(y)``), which needs an
instance to run on. An object is built from its constructor's defaults, with a small size or a
named hyper-parameter for each parameter without one (``num_qubits`` 2, ``channels`` 4); an
``nn.Module`` is then moved to float64, as the synthesized tensors are. An abstract class, or one
whose constructor refuses those values, is replaced by its first subclasses that build. Nothing is
built for a parameter that names another object (a model, a solver): that is left to the callers
and the documented examples, which build it as the package does.

This module imports torch; ``synthesis`` (which does not) reads the annotations and names an object
with ``BuiltObject``, and ``inputs.prepare`` builds it for each call, so that no call sees another's
changes.
"""

from __future__ import annotations

import enum
import inspect
import re
from typing import Any, Optional

import torch

from autograd_lint.dynamic import synthesis

MAX_SUBCLASSES = 3

# A constructor parameter named like a size is a small positive size (``dim`` there is a width,
# not the -1 of an axis).
_SIZE_LIKE = re.compile(r"(?:^|_)(?:channels|features|dim|dims|size|width|height|depth|heads|classes|"
                        r"length|len|units|hidden)$")
# Names of parameters that hold another object: nothing small stands in for them.
_OBJECT_NAME = re.compile(r"(?:^|_)(?:model|module|solver|optmodel|backend|operator|op|net|layer|fn|func|"
                          r"function|callback|config|cfg|options|params|device|dtype|path|file|name)$")


def built(klass: type) -> Optional[Any]:
    """An instance of ``klass``, or of its first subclass that builds; None when none does."""
    for candidate in [klass, *subclasses(klass)]:
        instance = built_exactly(candidate)
        if instance is not None:
            return instance
    return None


def built_exactly(klass: type) -> Optional[Any]:
    """An instance of ``klass`` itself, from its constructor; None when it cannot be built so."""
    if inspect.isabstract(klass):
        return None
    if isinstance(klass, enum.EnumMeta):
        members = list(klass)
        return members[0] if members else None
    try:
        parameters = list(inspect.signature(klass).parameters.values())
    except (TypeError, ValueError):
        return None
    keywords: dict[str, Any] = {}
    for parameter in parameters:
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) or \
                parameter.default is not inspect.Parameter.empty:
            continue
        value = constructor_value(parameter)
        if value is None:
            return None
        keywords[parameter.name] = value
    try:
        instance = klass(**keywords)
    except Exception:  # noqa: BLE001 - the constructor wants more than defaults
        return None
    if isinstance(instance, torch.nn.Module):
        # In float64, as the synthesized arguments are: a float32 filter bank would refuse them.
        try:
            return instance.double()
        except Exception:  # noqa: BLE001 - a module that overrides .double() and refuses
            return None
    return instance


def constructor_value(parameter: inspect.Parameter) -> Any:
    """A value for a constructor parameter without a default: a size, a named hyper-parameter,
    what the annotation says, else a small count (``k``, ``n_levels``: most such parameters are);
    None for one that names an object (a model, a solver) or is annotated as something else."""
    if _SIZE_LIKE.search(parameter.name.lower()):
        return 4
    named = synthesis.named_value(parameter.name)
    if named is not None and named != synthesis.LEADING_SIZE:
        return named[0]
    annotation = synthesis.annotation_text(parameter.annotation).removeprefix("builtins.")
    if annotation:
        return {"int": 2, "float": 0.5, "bool": False}.get(annotation)
    if synthesis.CALLABLE_NAMES.match(parameter.name.lower()) or _OBJECT_NAME.search(parameter.name.lower()):
        return None
    return 2


def subclasses(klass: type) -> list[type]:
    """The first few subclasses of ``klass``, breadth first."""
    found: list[type] = []
    try:
        stack = list(klass.__subclasses__())
    except TypeError:  # `type` itself, and other metaclasses
        return found
    while stack and len(found) < MAX_SUBCLASSES:
        sub = stack.pop(0)
        found.append(sub)
        stack.extend(sub.__subclasses__())
    return found
