"""What a decorator on an autograd method does to the method, read from its code or known from
torch: the model's answer to "can a fact about this method's body be trusted at its interface?".

A decorator sits between autograd and the method: it sees the arguments before the body does
and the result after it. ``@input_guard`` (fla) copies every tensor argument to a contiguous one,
so a rule about the layout of the gradient backward receives (AGL403) is wrong there, and an
unknown decorator could do anything of the kind. Each decorator is therefore given one effect:

- ``transparent``: the arguments reach the body and the result reaches autograd as they are
  (``functools.wraps`` wrappers that only log, check versions or enter a device guard; torch's
  ``once_differentiable``, ``no_grad``, ``compiler.disable``; a ``contextlib.contextmanager``
  guard used as a decorator);
- ``contiguous``: as transparent, but tensor arguments are made contiguous first (a wrapper that
  passes them through ``.contiguous()``, directly, through a helper of its module, or in a
  comprehension over ``args``/``kwargs``);
- ``autocast``: torch's ``custom_fwd``/``custom_bwd`` (autocast state and casts, nothing else);
- ``unknown``: anything else; the model cannot read it, and ``certainty`` lowers what rests on it.

Decorators defined in the project are read from ``ast`` in the facts pass (``definitions``), one
module at a time; ``resolve`` follows a decorator's name through the project's imports and
re-exports to its definition once every module's facts are merged.
"""

from __future__ import annotations

import ast
from typing import Mapping, Optional

from autograd_lint.analysis.ast_walk import dotted_name, walk
from autograd_lint.analysis.names import ModuleName, ModuleSymbols, absolute

TRANSPARENT = "transparent"
CONTIGUOUS = "contiguous"
AUTOCAST = "autocast"
UNKNOWN = "unknown"
# A definition that is another decorator under a new name (`contiguous = input_guard`,
# `def contiguous(fn): return input_guard(fn)`, `functools.partial(torch.amp.custom_fwd, ...)`):
# "=" and the name as its module writes it.
ALIAS = "="
EITHER = "|"
# `device_lib = getattr(torch, device)`: one of torch's device modules, chosen at run time.
TORCH_DEVICE_MODULE = "torch.<device>"

# What torch's own decorators do, by qualified name. Structural ones (staticmethod,
# classmethod) are the model's business and never reach this table.
LIBRARY: dict[str, str] = {
    **{f"{module}.{name}": AUTOCAST
       for module in ("torch.amp", "torch.cuda.amp", "torch.amp.autocast_mode", "torch.cpu.amp")
       for name in ("custom_fwd", "custom_bwd")},
    **{name: TRANSPARENT for name in (
        "torch.autograd.function.once_differentiable",
        "torch.autograd.once_differentiable",
        "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled",
        "torch.autograd.no_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.enable_grad", "torch.autograd.grad_mode.inference_mode",
        "torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo",
        "torch.jit.ignore", "torch.jit.unused", "torch.jit.export",
        "torch.cuda.nvtx.range", "torch.profiler.record_function", "torch.autograd.profiler.record_function",
        "typing.final", "typing_extensions.deprecated", "warnings.deprecated", "typing.override",
        "typing_extensions.override",
    )},
}
_PARTIAL = ("functools.partial", "partial")
_CONTEXT_MANAGERS = ("contextlib.contextmanager", "contextmanager")
_MAX_HOPS = 6


# --- the facts pass: what a module defines -------------------------------------------------

def definitions(tree: ast.Module) -> dict[str, str]:
    """The module-level functions (and assignments) of ``tree`` that can be decorators, with
    their effect or an alias (``ALIAS + name as written``). Functions that take a callable and
    give back a wrapper, the callable itself or another decorator's result are read; plain
    functions are left out (a decorator named after one is then unknown)."""
    functions = {s.name: s for s in _top_level(tree) if isinstance(s, ast.FunctionDef)}
    found: dict[str, set[str]] = {}
    for statement in _top_level(tree):
        if isinstance(statement, ast.FunctionDef):
            effect = _effect_of_function(statement, functions)
            if effect is not None:
                found.setdefault(statement.name, set()).add(effect)
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(
                statement.targets[0], ast.Name):
            alias = _aliased(statement.value)
            if alias is not None:
                found.setdefault(statement.targets[0].id, set()).add(ALIAS + alias)
    # Defined once per branch (`if torch_version >= 2.4: X = partial(...) else: X = ...`): every
    # definition, "|"-separated; the resolver needs them to agree.
    return {name: EITHER.join(sorted(effects)) for name, effects in found.items()}


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, those of top-level ``if``/``try`` blocks included (a decorator
    defined one way per torch version: fla's ``autocast_custom_fwd``)."""
    statements, pending = [], list(tree.body)
    while pending:
        statement = pending.pop(0)
        if isinstance(statement, (ast.If, ast.Try)):
            pending[:0] = statement.body + statement.orelse + getattr(statement, "finalbody", []) + [
                s for handler in getattr(statement, "handlers", []) for s in handler.body]
        else:
            statements.append(statement)
    return statements


def _aliased(value: ast.expr) -> Optional[str]:
    """``X = other``, ``X = functools.partial(other, ...)``: the other decorator's name;
    ``X = getattr(torch, device)``: a device module of torch."""
    if isinstance(value, ast.Call) and dotted_name(value.func) in _PARTIAL and value.args:
        return dotted_name(value.args[0])
    if isinstance(value, ast.Call) and dotted_name(value.func) == "getattr" and len(value.args) == 2 \
            and dotted_name(value.args[0]) == "torch":
        return TORCH_DEVICE_MODULE
    return dotted_name(value) if isinstance(value, (ast.Name, ast.Attribute)) else None


def _effect_of_function(function: ast.FunctionDef, functions: dict[str, ast.FunctionDef]) -> Optional[str]:
    if any(dotted_name(d.func if isinstance(d, ast.Call) else d) in _CONTEXT_MANAGERS for d in function.decorator_list):
        return TRANSPARENT  # a generator-based context manager, used as `@guard()`: ContextDecorator
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    if not params or not _may_be_decorator(function, params[0]):
        return None
    return _effect_of_decorator(function, params[0], functions, depth=0)


def _may_be_decorator(function: ast.FunctionDef, first: str) -> bool:
    """A cheap look at the body's own statements before reading it: a nested ``def``, or a
    ``return`` of the first parameter, bare or passed to a call."""
    for statement in function.body:
        if isinstance(statement, ast.FunctionDef):
            return True
        if isinstance(statement, ast.Return) and statement.value is not None:
            value = statement.value
            if isinstance(value, ast.Name) and value.id == first:
                return True
            if isinstance(value, ast.Call) and any(isinstance(a, ast.Name) and a.id == first for a in value.args):
                return True
    return False


# Where statements nest: a return is a statement, so the blocks are all there is to search (not
# the expressions, most of a function's nodes: the facts pass reads every module-level function).
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _own_returns(function: ast.FunctionDef) -> list[ast.Return]:
    """The ``return`` statements of ``function`` itself, not of the functions it defines."""
    found, pending = [], list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for block in _BLOCKS:
                statements = getattr(node, block, None)
                if statements:
                    pending.extend(statements)
    return found


def _effect_of_decorator(function: ast.FunctionDef, wrapped: str, functions: dict[str, ast.FunctionDef],
                         depth: int) -> Optional[str]:
    """The effect of ``function`` applied to the callable in its parameter ``wrapped``, or None
    when it does not look like a decorator at all."""
    nested = {s.name: s for s in function.body if isinstance(s, ast.FunctionDef)}
    effects = []
    for node in _own_returns(function):
        value = node.value
        if value is None:
            return None
        if isinstance(value, ast.Name) and value.id == wrapped:
            effects.append(TRANSPARENT)  # registers or tags the callable, gives it back
        elif isinstance(value, ast.Name) and value.id in nested:
            inner = nested[value.id]
            inner_params = [a.arg for a in inner.args.posonlyargs + inner.args.args]
            # A factory (`def guard(fn=None, *, opt=...)`: returns `decorator`, whose own
            # parameter is the callable) or the wrapper itself.
            if depth < 2 and inner_params and _returns_nested_def(inner):
                effects.append(_effect_of_decorator(inner, inner_params[0], functions, depth + 1) or UNKNOWN)
            else:
                effects.append(_effect_of_wrapper(inner, wrapped, functions))
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in nested:
            continue  # `return decorator(fn)`: the bare form of a factory, read through `decorator`
        elif isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Name) \
                and value.args[0].id == wrapped and dotted_name(value.func):
            effects.append(ALIAS + dotted_name(value.func))  # `return input_guard(fn)`
        else:
            return None
    if not effects:
        return None
    return effects[0] if len(set(effects)) == 1 else UNKNOWN


def _returns_nested_def(function: ast.FunctionDef) -> bool:
    nested = {s.name for s in function.body if isinstance(s, ast.FunctionDef)}
    return any(isinstance(s, ast.Return) and isinstance(s.value, ast.Name) and s.value.id in nested
               for s in function.body)


def _effect_of_wrapper(wrapper: ast.FunctionDef, wrapped: str, functions: dict[str, ast.FunctionDef]) -> str:
    """What the wrapper does around ``wrapped(...)``: every way out of it must return the call's
    result as it is; the call's arguments are the wrapper's own (transparent) or made contiguous."""
    calls = [n for n in walk(wrapper) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == wrapped]
    if not calls:
        return UNKNOWN  # the callable goes elsewhere (`checkpoint(fn, *args)`): we cannot follow it
    returns = _own_returns(wrapper)
    if not returns or any(r.value not in calls for r in returns):
        return UNKNOWN  # the result is kept, changed or replaced
    own = {a.arg for a in wrapper.args.posonlyargs + wrapper.args.args + wrapper.args.kwonlyargs}
    star = {a.arg for a in (wrapper.args.vararg, wrapper.args.kwarg) if a is not None}
    rebound = _rebound_names(wrapper)
    effects = set()
    for call in calls:
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            value = argument.value if isinstance(argument, ast.Starred) else argument
            if isinstance(value, ast.Name) and value.id in (own | star) and value.id not in rebound:
                effects.add(TRANSPARENT)
            elif _made_contiguous(value, wrapper, functions):
                effects.add(CONTIGUOUS)
            else:
                return UNKNOWN
    return CONTIGUOUS if CONTIGUOUS in effects else TRANSPARENT


def _rebound_names(function: ast.FunctionDef) -> set[str]:
    return {t.id for n in walk(function) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}


def _made_contiguous(value: ast.expr, wrapper: ast.FunctionDef, functions: dict[str, ast.FunctionDef]) -> bool:
    """Is this argument (a comprehension over the arguments, or a name the wrapper builds) made
    of the wrapper's arguments passed through ``.contiguous()``?"""
    if isinstance(value, ast.Name):
        sources = [n for n in walk(wrapper) if _binds(n, value.id) and not _empty(n)]
        return bool(sources) and all(_contiguous_inside(s, functions) for s in sources)
    if isinstance(value, (ast.GeneratorExp, ast.ListComp, ast.DictComp, ast.SetComp, ast.Tuple, ast.List)):
        return _contiguous_inside(value, functions)
    return False


def _binds(node: ast.AST, name: str) -> bool:
    """An assignment to ``name``, or a call that fills it (``name.append(...)``, ``name[k] = ...``)."""
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name or (
            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name) for t in node.targets)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "extend"):
        return isinstance(node.func.value, ast.Name) and node.func.value.id == name
    return False


def _empty(binding: ast.AST) -> bool:
    """``name = []`` (or ``{}``, ``()``, ``list()``, ``dict()``): a container filled later."""
    value = getattr(binding, "value", None)
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)) and not value.elts:
        return True
    if isinstance(value, ast.Dict) and not value.keys:
        return True
    return isinstance(value, ast.Call) and dotted_name(value.func) in ("list", "dict", "tuple") and not value.args


def _contiguous_inside(node: ast.AST, functions: dict[str, ast.FunctionDef]) -> bool:
    for sub in walk(node):
        if isinstance(sub, ast.Call):
            if isinstance(sub.func, ast.Attribute) and sub.func.attr == "contiguous":
                return True
            helper = functions.get(sub.func.id) if isinstance(sub.func, ast.Name) else None
            if helper is not None and any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "contiguous"
                    for n in walk(helper)):
                return True
    return False


# --- after the merge: what a name written in a module means -----------------------------------

class DecoratorResolver:
    """Follows decorator names through the gathered modules: ``modules`` by name, their
    bindings (``symbols``) and their decorator definitions (``defined``, from ``definitions``)."""

    def __init__(self, modules: Mapping[str, ModuleName], symbols: Mapping[str, ModuleSymbols],
                 defined: Mapping[str, Mapping[str, str]]) -> None:
        self.modules, self.symbols, self.defined = modules, symbols, defined

    def resolve(self, written: str, module: str) -> tuple[str, Optional[str]]:
        """The effect of the decorator ``written`` (``input_guard``, ``utils.input_guard``,
        ``torch.amp.custom_fwd``) in ``module``, and the module of the project whose facts are
        still missing to say it (None when nothing is missing)."""
        return self._in_module(written, module, 0)

    def _in_module(self, written: str, module: str, hops: int) -> tuple[str, Optional[str]]:
        if hops > _MAX_HOPS:
            return UNKNOWN, None
        head, _, rest = written.partition(".")
        own = self.defined.get(module, {})
        if head in own:
            answers = {self._definition(one, rest, module, hops) for one in own[head].split(EITHER)}
            if len(answers) == 1:
                return answers.pop()
            return UNKNOWN, next((missing for _, missing in answers if missing), None)
        symbols = self.symbols.get(module)
        if symbols is not None and head in symbols.imports:
            target = absolute(symbols.imports[head], self.modules[module])
            if target is None:
                return UNKNOWN, None
            return self._target(target + ("." + rest if rest else ""), hops + 1)
        return self._target(written, hops + 1)

    def _definition(self, definition: str, rest: str, module: str, hops: int) -> tuple[str, Optional[str]]:
        if definition.startswith(ALIAS):
            aliased = definition[len(ALIAS):] + ("." + rest if rest else "")
            return self._in_module(aliased, module, hops + 1)
        return (definition, None) if not rest else (UNKNOWN, None)

    def _target(self, target: str, hops: int) -> tuple[str, Optional[str]]:
        """An absolute dotted name: torch's, or a definition or re-export of a gathered module."""
        if target.startswith(TORCH_DEVICE_MODULE + "."):  # torch.cuda, torch.npu...: as torch.cuda's
            target = "torch.cuda." + target[len(TORCH_DEVICE_MODULE) + 1:]
        if target in LIBRARY:
            return LIBRARY[target], None
        owner, _, name = target.rpartition(".")
        if not owner or hops > _MAX_HOPS:
            return UNKNOWN, None
        if owner not in self.modules:
            # A module of the project under a longer name: a vendored copy imported by the name
            # it has where it came from (unsloth_zoo/_vendored/fla is imported as `fla`).
            vendored = [m for m in self.modules if m.endswith("." + owner)]
            if len(vendored) != 1:
                # A module the run has not read (yet, when it is the project's), or one outside it.
                return UNKNOWN, owner
            owner = vendored[0]
        symbols = self.symbols[owner]
        if name in self.defined.get(owner, {}) or name in symbols.imports:
            return self._in_module(name, owner, hops + 1)
        for star in symbols.star_imports:
            base = absolute(star, self.modules[owner])
            if base is not None:
                effect, missing = self._target(f"{base}.{name}", hops + 1)
                if effect != UNKNOWN or missing is not None:
                    return effect, missing
        return UNKNOWN, None
