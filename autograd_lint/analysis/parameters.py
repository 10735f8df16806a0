"""Which inputs of a Function do the file's own callers fill with a trainable ``nn.Parameter``?

Returning ``None`` for an input is right for a constant (rotary cos/sin, masks, a frozen LoRA
base weight) and a silent bug for a parameter that trains. Names cannot tell them apart (a frozen
``weight`` is the most common LoRA idiom), so the evidence is the call site, in the same file.
Three ways make the argument a trainable parameter:

    self.bias = nn.Parameter(torch.zeros(n))            # registered by the file itself
    return QATLinear.apply(x, self.weight, self.bias)   # or `qat_linear = QATLinear.apply`

    self.proj = nn.Linear(n, m)        # (or `lin = torch.nn.Linear(n, m)` in the caller)
    return MyFn.apply(x, self.proj.weight, self.proj.bias)   # `lin.weight`, `lin.bias`

    class QATLinear(nn.Linear):        # torch.nn's module made them: self.weight, self.bias
        def forward(self, x):
            return QATLinearFn.apply(x, self.weight, self.bias)

A torch.nn module is known by what its name means in the file (its imports, ``ImportMap.qualify``;
a class the file defines itself is not torch's), and only the modules of ``TORCH_NN_MODULES``,
whose constructors make ``.weight``/``.bias`` Parameters that require grad. The constructor's
switch must be read as on: ``bias=False`` (or ``elementwise_affine=False``, ``affine=False``,
``_freeze=True``) passed to it, or to ``super().__init__`` in a subclass, makes the parameter
``None`` or frozen; a switch given by a variable counts only when it is the caller's own
parameter whose default turns it on (``def __init__(self, n, m, bias=True)``).

A parameter made with ``requires_grad=False``, and any file that sets or tests ``requires_grad``
(``requires_grad_(False)``, ``p.requires_grad = False``, ``if self.bias.requires_grad:``), give no
evidence: something there decides which parameters train. So does a subclass that assigns
``self.bias`` itself (other than a trainable ``nn.Parameter``) or calls ``register_parameter``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from autograd_lint.analysis.ast_walk import dotted_name, keyword_value


@dataclass(frozen=True)
class ParameterArgument:
    shown: str  # how the caller writes it: ``self.bias``, ``lin.weight``, ``self.proj.bias``
    line: int  # where it is made: ``nn.Parameter(...)``, ``nn.Linear(...)``, or the subclass
    made_by: str  # what makes it trainable, for the message


@dataclass(frozen=True)
class _Switch:
    """A constructor argument that, given as the literal ``off``, leaves the parameter ``None``
    (``bias=False``) or frozen (``Embedding(_freeze=True)``)."""

    position: int
    keyword: str
    off: bool = False


# torch.nn modules whose constructor makes trainable Parameters: parameter -> the switches that
# can turn it off. (``torch.nn.modules.linear.Linear`` and the other module paths count too.)
_CONV = {"weight": (), "bias": (_Switch(7, "bias"),)}
_NORM = {"weight": (_Switch(3, "affine"),), "bias": (_Switch(3, "affine"),)}
TORCH_NN_MODULES: dict[str, dict[str, tuple[_Switch, ...]]] = {
    "Linear": {"weight": (), "bias": (_Switch(2, "bias"),)},
    "LazyLinear": {"weight": (), "bias": (_Switch(1, "bias"),)},
    "Bilinear": {"weight": (), "bias": (_Switch(3, "bias"),)},
    "Conv1d": _CONV, "Conv2d": _CONV, "Conv3d": _CONV,
    "ConvTranspose1d": _CONV, "ConvTranspose2d": _CONV, "ConvTranspose3d": _CONV,
    "_ConvNd": {"weight": (), "bias": (_Switch(9, "bias"),)},
    "Embedding": {"weight": (_Switch(8, "_freeze", off=True),)},
    "EmbeddingBag": {"weight": ()},
    "LayerNorm": {"weight": (_Switch(2, "elementwise_affine"),),
                  "bias": (_Switch(2, "elementwise_affine"), _Switch(3, "bias"))},
    "RMSNorm": {"weight": (_Switch(2, "elementwise_affine"),)},
    "GroupNorm": _NORM,
    "BatchNorm1d": _NORM, "BatchNorm2d": _NORM, "BatchNorm3d": _NORM,
}

_FREEZES = re.compile(r"requires_grad_\(\s*(False|0)\s*\)|\.requires_grad\s*=\s*(False|0)\b")


def torch_nn_module(qualified: str) -> Optional[str]:
    """The name of the ``TORCH_NN_MODULES`` entry that the qualified name ``qualified`` is
    (``torch.nn.Linear``, ``torch.nn.modules.conv.Conv2d``), or None."""
    module, _, name = qualified.rpartition(".")
    if name in TORCH_NN_MODULES and (module == "torch.nn" or module.startswith("torch.nn.modules")):
        return name
    return None


class TrainableArguments:
    """The evidence of one file (its ``ast`` tree): which arguments of ``<Fn>.apply(...)`` calls
    are trainable parameters. ``qualify`` resolves a dotted name through the file's imports;
    ``defined`` are the names the file's top level binds itself (they shadow any import)."""

    def __init__(self, tree: Optional[ast.Module], text: str, qualify: Callable[[str], str],
                 defined: frozenset[str] = frozenset()) -> None:
        self.tree, self.text = tree, text
        self._qualify, self._defined = qualify, defined
        self._calls: Optional[list[tuple[ast.Call, Optional[ast.ClassDef], list[ast.AST]]]] = None
        self._parameters: Optional[dict[str, int]] = None  # the file's own `self.x = nn.Parameter(...)`
        self._aliases: Optional[dict[str, set[str]]] = None  # class name -> names bound to its apply

    def might_train(self) -> bool:
        """Cheap: whether the file names anything that can make a trainable parameter."""
        return "Parameter" in self.text or any(name in self.text for name in TORCH_NN_MODULES)

    def at(self, class_name: str, position: int) -> Optional[ParameterArgument]:
        """A call ``<class_name>.apply(...)`` in this file that passes a trainable parameter at
        ``position``; None when there is no such evidence."""
        if self.tree is None or _FREEZES.search(self.text):
            return None
        if self._aliases is None:  # one walk for all the file's classes: the tree may be large
            self._aliases = _apply_aliases(self.tree) if _BINDS_APPLY.search(self.text) else {}
        aliases = self._aliases.get(class_name, set())
        for call, cls, functions in self._apply_calls():
            if not _calls_apply(call.func, class_name, aliases):
                continue
            args = call.args
            if any(isinstance(a, ast.Starred) for a in args[:position + 1]) or position >= len(args):
                continue
            found = self._trainable(args[position], cls, functions)
            if found is None:
                continue
            attribute = found.shown.rpartition(".")[2]
            if re.search(rf"\b{re.escape(attribute)}\.requires_grad\b", self.text):
                continue  # tested: trainable ones may go another way
            return found
        return None

    # ---- the three kinds of evidence --------------------------------------------------------
    def _trainable(self, argument: ast.expr, cls: Optional[ast.ClassDef],
                   functions: list[ast.AST]) -> Optional[ParameterArgument]:
        if not isinstance(argument, ast.Attribute):
            return None
        owner, parameter = argument.value, argument.attr
        if isinstance(owner, ast.Name) and owner.id == "self":
            if self._parameters is None:
                self._parameters = _trainable_parameters(self.tree)
            own = self._parameters.get(parameter)
            if own is not None:
                return ParameterArgument(f"self.{parameter}", own, "a trainable nn.Parameter")
            return self._inherited(parameter, cls)
        if (isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name)
                and owner.value.id == "self" and cls is not None):
            made = _self_assignments(cls).get(owner.attr, [])
            if len(made) != 1:
                return None
            value, method = made[0]
            return self._of_module_call(value, parameter, f"self.{owner.attr}.{parameter}", method)
        if isinstance(owner, ast.Name):
            value, scope = self._local_binding(owner.id, functions)
            return self._of_module_call(value, parameter, f"{owner.id}.{parameter}", scope)
        return None

    def _of_module_call(self, made: Optional[ast.expr], parameter: str, shown: str,
                        scope: Optional[ast.AST]) -> Optional[ParameterArgument]:
        """``made`` (written in ``scope``) is ``nn.Linear(...)``, a module of the table, whose
        ``parameter`` its arguments leave trainable."""
        if not isinstance(made, ast.Call):
            return None
        module = self._torch_module(made.func)
        if module is None or not self._switched_on(module, parameter, made.args, made.keywords, scope):
            return None
        return ParameterArgument(shown, made.lineno, f"the trainable {parameter} that torch.nn.{module}(...) makes")

    def _inherited(self, parameter: str, cls: Optional[ast.ClassDef]) -> Optional[ParameterArgument]:
        """``self.<parameter>`` in a subclass of a module of the table that leaves it as its base
        made it: trainable unless the call of the base's ``__init__`` switches it off."""
        if cls is None or parameter in _self_assignments(cls) or _registers_parameters(cls):
            return None
        modules = {m for m in (self._torch_module(base) for base in cls.bases) if m is not None}
        if len(modules) != 1 or len(cls.bases) != 1:
            return None  # several bases: which __init__ runs is not read here
        module = modules.pop()
        if parameter not in TORCH_NN_MODULES[module]:
            return None
        init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        if init is not None:
            base_call = _base_init_call(init, cls)
            if base_call is None:
                return None  # the base's __init__ called in a way we cannot read
            args, keywords = base_call
            if not self._switched_on(module, parameter, args, keywords, init):
                return None
        return ParameterArgument(f"self.{parameter}", cls.lineno,
                                 f"the trainable {parameter} that {cls.name} inherits from torch.nn.{module}")

    def _switched_on(self, module: str, parameter: str, args: list[ast.expr], keywords: list[ast.keyword],
                     scope: Optional[ast.AST]) -> bool:
        starred = next((i for i, a in enumerate(args) if isinstance(a, ast.Starred)), None)
        double_starred = any(k.arg is None for k in keywords)
        for switch in TORCH_NN_MODULES[module].get(parameter, ()):
            given = keyword_value(_as_call(args, keywords), switch.keyword)
            if given is None and starred is not None and starred <= switch.position:
                return False  # `*args` may hold it
            if given is None and switch.position < len(args):
                given = args[switch.position]
            if given is None and double_starred:
                return False  # `**kwargs` may hold it (given explicitly, it cannot: a TypeError)
            if given is not None and not _reads_on(given, switch, scope):
                return False
        return True

    def _torch_module(self, node: ast.expr) -> Optional[str]:
        name = dotted_name(node)
        if name is None or name.partition(".")[0] in self._defined:
            return None  # the file's own class of that name, not torch's
        return torch_nn_module(self._qualify(name))

    @staticmethod
    def _local_binding(name: str, functions: list[ast.AST]) -> tuple[Optional[ast.expr], Optional[ast.AST]]:
        """The one value bound to ``name`` in the innermost scope (of ``functions``, module
        first) that binds it at all, and that scope; None when it is bound more than once or in a
        way we cannot read."""
        for scope in reversed(functions):
            values = _bindings(scope, name)
            if values:
                return (values[0] if len(values) == 1 else None), scope
        return None, None

    def _apply_calls(self) -> list[tuple[ast.Call, Optional[ast.ClassDef], list[ast.AST]]]:
        """Every call in the module-level statements that can hold an ``apply`` call (their lines
        name ``.apply`` or a name bound to one), with its enclosing class and the scopes around it
        (the module, then each enclosing function). The other statements hold none: a large
        module's tests are not walked."""
        if self._calls is None:
            self._calls = []
            if self.tree is not None:
                lines = self._lines_naming_apply()
                for statement in self.tree.body:
                    if lines.intersection(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1)):
                        self._calls += _calls_in(_Only(statement), None, [self.tree])
        return self._calls

    def _lines_naming_apply(self) -> set[int]:
        """The lines that name ``.apply`` or a name the file binds to an ``apply``."""
        aliases = {name for names in (self._aliases or {}).values() for name in names}
        pattern = re.compile(r"\.apply\b" + "".join(rf"|\b{re.escape(name)}\b" for name in sorted(aliases)))
        return {number for number, line in enumerate(self.text.splitlines(), 1) if pattern.search(line)}


# `.apply` not called where it is written (`name = SomeFn.apply`): the file may bind a name to an
# apply, and ``_apply_aliases`` walks the tree only then.
_BINDS_APPLY = re.compile(r"\.apply\b(?!\s*\()")


class _Only(ast.AST):
    """A node whose one child is ``statement``: ``_calls_in`` over one module-level statement, as
    over the module (the same class and scopes for each call)."""

    _fields = ("body",)

    def __init__(self, statement: ast.stmt) -> None:
        super().__init__()
        self.body = [statement]


def _calls_in(node: ast.AST, cls: Optional[ast.ClassDef],
              scopes: list[ast.AST]) -> Iterator[tuple[ast.Call, Optional[ast.ClassDef], list[ast.AST]]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            yield from _calls_in(child, child, scopes)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _calls_in(child, cls, scopes + [child])
        else:
            if isinstance(child, ast.Call) and isinstance(child.func, (ast.Attribute, ast.Name)):
                yield child, cls, scopes
            yield from _calls_in(child, cls, scopes)


def _reads_on(given: ast.expr, switch: _Switch, scope: Optional[ast.AST]) -> bool:
    """The switch argument ``given`` is certainly on: a literal other than ``off``, or a parameter
    of the function ``scope`` that it never rebinds, whose default is such a literal
    (``bias=True`` in its signature): on unless its caller turns it off."""
    if isinstance(given, ast.Constant):
        return bool(given.value) != switch.off if isinstance(given.value, (bool, int, type(None))) else False
    if isinstance(given, ast.Name) and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        default = _default_of(scope, given.id)
        if isinstance(default, ast.Constant) and _bindings(scope, given.id) == [None]:
            return _reads_on(default, switch, None)  # bound only as the parameter
    return False


def _default_of(function: ast.FunctionDef, name: str) -> Optional[ast.expr]:
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(arguments.defaults):]], arguments.defaults))
    defaults.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None})
    return defaults.get(name)


def _as_call(args: list[ast.expr], keywords: list[ast.keyword]) -> ast.Call:
    return ast.Call(func=ast.Name(id="_", ctx=ast.Load()), args=args, keywords=keywords)


def _base_init_call(init: ast.FunctionDef, cls: ast.ClassDef) -> Optional[tuple[list[ast.expr], list[ast.keyword]]]:
    """The arguments of the one ``super().__init__(...)`` (``super(Cls, self).__init__``, or
    ``Base.__init__(self, ...)`` without ``self``) in ``__init__``; None when there is not
    exactly one."""
    found = []
    for node in ast.walk(init):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__"):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            found.append((node.args, node.keywords))
        elif dotted_name(owner) in {dotted_name(b) for b in cls.bases} and node.args:
            found.append((node.args[1:], node.keywords))
    return found[0] if len(found) == 1 else None


def _bindings(scope: ast.AST, name: str) -> list[Optional[ast.expr]]:
    """The values bound to the plain name ``name`` directly in ``scope`` (not in nested functions
    or classes); None for a binding whose value is not read (a loop target, unpacking, ``with``,
    a parameter, an import)."""
    found: list[Optional[ast.expr]] = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        arguments = scope.args
        every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        if any(a.arg == name for a in every):
            found.append(None)
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    found.append(node.value)
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                    found.append(None)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            if isinstance(node.target, ast.Name) and node.target.id == name:
                found.append(node.value if not isinstance(node, ast.AugAssign) else None)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.target)):
                found.append(None)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.optional_vars)):
                found.append(None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.partition(".")[0]) == name for a in node.names):
                found.append(None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found.append(None)
    return found


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope``'s own body: nested functions and classes are named, not entered."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def _self_assignments(cls: ast.ClassDef) -> dict[str, list[tuple[Optional[ast.expr], ast.AST]]]:
    """``self.<attr> = value`` in the class's methods: attr -> each (value, the method), the value
    None for a binding that is not read (unpacking, ``+=``)."""
    found: dict[str, list[tuple[Optional[ast.expr], ast.AST]]] = {}
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                pairs = [(node.target, node.value if isinstance(node, ast.AnnAssign) else None)]
            else:
                continue
            for target, value in pairs:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                        found.setdefault(sub.attr, []).append((value if sub is target else None, method))
    return found


def _registers_parameters(cls: ast.ClassDef) -> bool:
    """``register_parameter`` or ``setattr`` in the class: parameters set where we do not read."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Call):
            name = dotted_name(node.func) or ""
            if name.endswith("register_parameter") or name in ("setattr", "delattr"):
                return True
    return False


def _trainable_parameters(tree: ast.Module) -> dict[str, int]:
    """``self.<attr> = nn.Parameter(...)`` (without ``requires_grad=False``) -> its line."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not (isinstance(value, ast.Call) and _last_name(value.func) == "Parameter"):
            continue
        if any(k.arg == "requires_grad" and not (isinstance(k.value, ast.Constant) and k.value.value is True)
               for k in value.keywords) or len(value.args) > 1:
            continue  # frozen, or a requires_grad we cannot read
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.setdefault(target.attr, node.lineno)
    return found


def _apply_aliases(tree: ast.Module) -> dict[str, set[str]]:
    """For each class name, the names bound to ``<class name>.apply`` (``qat_linear =
    QATLinear.apply``)."""
    names: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute)
                and node.value.attr == "apply"):
            class_name = _last_name(node.value.value)
            if class_name is not None:
                names.setdefault(class_name, set()).update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _calls_apply(func: ast.expr, class_name: str, aliases: set[str]) -> bool:
    return _is_apply(func, class_name) or (isinstance(func, ast.Name) and func.id in aliases)


def _is_apply(node: ast.expr, class_name: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "apply" and _last_name(node.value) == class_name


def _last_name(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
