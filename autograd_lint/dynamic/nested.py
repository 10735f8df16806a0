"""Function classes that an import leaves inside functions it never calls, defined from their own
source where that gives the very class the function would make.

A class statement inside a function (a factory, a method that builds a surrogate on demand, a test)
exists only once the function runs; the import does not run it, and calling it needs arguments the
linter would have to guess. But where the class's code reads no name of the functions around it
(no parameter, no local: only the module's globals and builtins), running its statement in the
module's namespace makes the same class: its methods, decorators and bases mean what they would
mean inside the function. Such a class is then checked like any other; one that reads a name of
its function stays "not defined", and the reason names what it reads.

Runs in the child only (it executes the user's class statement, as importing the module does).
"""

from __future__ import annotations

import ast
import symtable
import textwrap
from dataclasses import dataclass
from typing import Any, Optional

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class NestedClass:
    """A class statement whose nearest enclosing scope is a function."""

    node: ast.ClassDef
    qualname: str  # as Python would name it: ``make.<locals>.Cube``
    function: str  # the innermost function around it, as a call: ``Learner.build()``
    function_locals: frozenset[str]  # every name the functions around it bind (parameters included)
    # parameters of those functions that have a default and are never assigned in the function: the
    # value the class would see when the function is called without them (the innermost binding wins)
    parameter_defaults: tuple[tuple[str, ast.expr], ...] = ()
    # the outermost function around it, where the package can call it: (None, name) for a function
    # of the module, (class name, method name) for a method of a class of the module; None otherwise
    holder: Optional[tuple[Optional[str], str]] = None


def nested_classes(source: str, filename: str) -> list[NestedClass]:
    """Class statements of ``source`` that sit in a function (under any ``if``, ``for``, ``try``
    of it), not in another class that itself sits in a function."""
    try:
        tree = ast.parse(source, filename)
        table = symtable.symtable(source, filename, "exec")
    except (SyntaxError, ValueError, RecursionError):
        return []
    found: list[NestedClass] = []

    # top: at the module's level (under its `if`s and `try`s too); owner: the class of the module
    # whose body this is
    def visit(node: ast.AST, prefix: str, functions: list[ast.AST], in_class: bool,
              holder: Optional[tuple[Optional[str], str]], owner: Optional[str], top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                if functions and not in_class:
                    found.append(NestedClass(child, prefix + child.name, _call_name(prefix),
                                             frozenset().union(*(_locals(table, f) for f in functions)),
                                             _parameter_defaults(table, functions), holder))
                visit(child, f"{prefix}{child.name}.", functions, in_class or bool(functions), holder,
                      child.name if top else None, False)
            elif isinstance(child, _FUNCTIONS):
                outermost = not functions and (top or owner is not None)
                visit(child, f"{prefix}{child.name}.<locals>.", [*functions, child], in_class,
                      (owner, child.name) if outermost else holder, None, False)
            elif isinstance(child, ast.Lambda):
                continue
            else:
                visit(child, prefix, functions, in_class, holder, owner, top)

    visit(tree, "", [], False, None, None, True)
    return found


def names_read_from_functions(nested: NestedClass, source: str) -> Optional[set[str]]:
    """The names of the functions around it that the class's code reads (its decorators, bases,
    body and methods); None when its statement does not compile on its own (``nonlocal``)."""
    text = _statement_text(nested.node, source)
    try:
        table = symtable.symtable(text, "<class>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return None
    read = {symbol.get_name() for symbol in table.get_symbols() if symbol.is_referenced()}
    stack = list(table.get_children())
    while stack:
        scope = stack.pop()
        stack.extend(scope.get_children())
        read.update(symbol.get_name() for symbol in scope.get_symbols()
                    if symbol.is_global() or (symbol.is_free() and scope.get_type() == "class"))
    return read & nested.function_locals


def default_bindings(nested: NestedClass, names: set[str], module: Any) -> Optional[dict[str, Any]]:
    """The values ``names`` would have inside the function when it is called without them: each
    must be a parameter whose default is a literal (``1e-3``, ``(1, 1)``, ``None``) or a dotted name
    of the module (``DEFAULT_EPS``, ``torch.float32``), never reassigned in the function. None as
    soon as one is not (a value computed by the function's code is left to the function)."""
    defaults = dict(nested.parameter_defaults)
    values: dict[str, Any] = {}
    for name in names:
        if name not in defaults:
            return None
        found, value = _constant_value(defaults[name], module)
        if not found:
            return None
        values[name] = value
    return values


def _constant_value(expression: ast.expr, module: Any) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(expression)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    dotted: list[str] = []
    while isinstance(expression, ast.Attribute):
        dotted.append(expression.attr)
        expression = expression.value
    if not isinstance(expression, ast.Name) or expression.id not in vars(module):
        return False, None
    value = vars(module)[expression.id]
    for attribute in reversed(dotted):
        try:
            value = getattr(value, attribute)
        except Exception:  # noqa: BLE001 - a module attribute that raises: not a constant
            return False, None
    return True, value


def define(nested: NestedClass, source: str, module: Any, bindings: Optional[dict] = None) -> Any:
    """Run the class statement in a copy of the module's namespace (a class of the same name at
    the module's top level is left alone), with ``bindings`` (a function's parameters the class
    reads) added to it; returns the class, named as Python would have."""
    text = _statement_text(nested.node, source)
    first = min([nested.node.lineno] + [d.lineno for d in nested.node.decorator_list])
    code = compile("\n" * (first - 1) + text, getattr(module, "__file__", None) or "<module>", "exec")
    namespace = dict(vars(module))
    namespace.update(bindings or {})
    exec(code, namespace)  # noqa: S102 - the user's class statement, as the import would run it
    cls = namespace[nested.node.name]
    cls.__qualname__ = nested.qualname
    return cls


def _statement_text(node: ast.ClassDef, source: str) -> str:
    lines = source.splitlines(keepends=True)
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return textwrap.dedent("".join(lines[first - 1:node.end_lineno or node.lineno]))


def _locals(table: symtable.SymbolTable, function: ast.AST) -> frozenset[str]:
    scope = _scope_of(table, function)
    if scope is None:  # cannot tell what it binds: everything it names
        return frozenset(node.id for node in ast.walk(function) if isinstance(node, ast.Name))
    return frozenset(symbol.get_name() for symbol in scope.get_symbols()
                     if symbol.is_local() or symbol.is_parameter())


def _parameter_defaults(table: symtable.SymbolTable, functions: list[ast.AST]) -> tuple:
    defaults: dict[str, ast.expr] = {}
    for function in functions:  # outermost first: an inner function's binding shadows an outer one
        scope = _scope_of(table, function)
        bound = _locals(table, function)
        with_default = _defaults_of(function.args)  # type: ignore[attr-defined]
        for name in bound:
            defaults.pop(name, None)
            symbol = scope.lookup(name) if scope is not None else None
            if (name in with_default and symbol is not None and symbol.is_parameter()
                    and not symbol.is_assigned()):
                defaults[name] = with_default[name]
    return tuple(sorted(defaults.items()))


def _defaults_of(arguments: ast.arguments) -> dict[str, ast.expr]:
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = dict(zip((a.arg for a in positional[len(positional) - len(arguments.defaults):]),
                     arguments.defaults))
    pairs.update((a.arg, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None)
    return pairs


def _scope_of(table: symtable.SymbolTable, function: ast.AST) -> Optional[symtable.SymbolTable]:
    stack = [table]
    while stack:
        scope = stack.pop()
        if (scope.get_type() == "function" and scope.get_name() == getattr(function, "name", None)
                and scope.get_lineno() == function.lineno):
            return scope
        stack.extend(scope.get_children())
    return None


def _call_name(prefix: str) -> str:
    return prefix.removesuffix(".<locals>.").replace(".<locals>.", ".") + "()"
