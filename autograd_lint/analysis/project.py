"""Project-wide facts, gathered in a cheap first pass over every linted file.

Some rules need to know about other files: a Function base class defined elsewhere (AGL105,
base-class resolution), ``.apply(...)`` call sites (AGL101's legacy defaults), and which Function
classes any ``gradcheck`` reaches (AGL502). Each file contributes a small ``FileFacts``; the merged
``ProjectFacts`` is handed to the per-file analysis, so serial, parallel and cached runs see the
same facts.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Callable, Iterable, Optional

from autograd_lint.analysis.ast_walk import dotted_name, walk
from autograd_lint.analysis.decorators import DecoratorResolver, definitions
from autograd_lint.analysis.module_index import FUNCTION_BASES, REBOUND, ModuleIndex
from autograd_lint.analysis.names import ModuleName, ModuleSymbols, NameTable, Scope, build_name_table
from autograd_lint.digest import blake2b
from autograd_lint.source import source_lines


@dataclass
class FileFacts:
    """What one file says, independent of where it lies (cached by its content): names are as
    written in it, resolved in ``ProjectFacts.merge`` once the file's module name is known."""

    # (class name, last names of its bases as imported, is it directly a Function class,
    #  its bases as written)
    classes: list[tuple[str, list[str], bool, list[str]]] = field(default_factory=list)
    symbols: ModuleSymbols = field(default_factory=ModuleSymbols)
    apply_arg_counts: dict[str, list[Optional[int]]] = field(default_factory=dict)  # by name as written
    apply_arg_kinds: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)  # the same, per argument
    gradchecked_names: set[str] = field(default_factory=set)
    # module-level function -> names it applies (`def cube(x): return Cube.apply(x)`), so a
    # gradcheck of the helper in another file reaches the class.
    helpers: dict[str, set[str]] = field(default_factory=dict)
    # class name -> methods it defines, and the ctx attributes they set (None: ctx escapes to
    # code we cannot see), so subclasses in other files know what they inherit.
    class_members: dict[str, tuple[set[str], Optional[set[str]]]] = field(default_factory=dict)
    grad_fn_attributes: set[str] = field(default_factory=set)  # `y.grad_fn.attr = ...`
    # class name -> its source, for the classes that define autograd methods and have bases:
    # a subclass in another module inherits what they define (``class_model``).
    class_sources: dict[str, "ClassSource"] = field(default_factory=dict)
    # module-level functions (and aliases) that can be decorators -> what they do
    # (``decorators.definitions``), and the decorators written on autograd methods here
    decorator_defs: dict[str, str] = field(default_factory=dict)
    decorators_used: set[str] = field(default_factory=set)
    # `X` of every `X.apply`, `X.forward`, `X.backward` ... written here, call or not: the
    # classes some code of the project reaches (by name: a wider net, never a narrower one)
    reached_names: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class ClassSource:
    """A class statement's text (decorators included, dedented to column 0), where it starts in
    its file, and its module's imports (local name -> qualified name), so that the methods a
    subclass in another module inherits are read with the names of the module they are in."""

    text: str
    line: int
    imports: tuple[tuple[str, str], ...]
    star_imports: tuple[str, ...] = ()
    column: int = 0  # how deep the class is indented in its file (its text is dedented)
    # Its file, once the project's facts are merged (``ProjectFacts.merge``'s ``paths``): where a
    # subclass's finding shows the inherited method (a related location); "" when not known.
    path: str = ""


@dataclass
class ProjectFacts:
    """Facts about classes are keyed by the class's key, ``module.Class`` (see ``names``)."""

    # Names of classes that may be Function classes, by name alone (a class whose base has the
    # name of one): which files to read at all. What a name means is ``names``'s to say.
    function_names: frozenset[str] = frozenset()
    names: NameTable = field(default_factory=NameTable)
    subclassed_keys: frozenset[str] = frozenset()  # Function classes some other class derives from
    apply_arg_counts: dict[str, list[Optional[int]]] = field(default_factory=dict)
    # Function class -> the kind of each positional argument of each `.apply(...)` call
    # (module_index.literal_kind): what callers pass, for input_evidence
    apply_arg_kinds: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    gradchecked_keys: frozenset[str] = frozenset()
    bases: dict[str, list[str]] = field(default_factory=dict)  # Function class -> its Function bases
    # Function classes directly derived from torch's Function (their chain ends there)
    roots: frozenset[str] = frozenset()
    class_members: dict[str, tuple[set[str], Optional[set[str]]]] = field(default_factory=dict)
    # ctx attributes some code sets from outside the Function, through an output's grad_fn
    grad_fn_attributes: frozenset[str] = frozenset()
    # Function classes some Function class derives from -> their source (what subclasses inherit)
    class_sources: dict[str, ClassSource] = field(default_factory=dict)
    # "module:decorator as written there" -> its effect (``decorators``), for the decorators
    # written on autograd methods; one missing here is unknown
    decorator_effects: dict[str, str] = field(default_factory=dict)
    # modules whose facts a decorator's definition needs and the run has not read: the engine
    # reads those that are files of the project, and merges again
    unread_modules: frozenset[str] = frozenset()
    # Function classes of private modules (`pkg/_experimental.py`) that no code of the project
    # applies, subclasses, gradchecks or calls a method of: nothing can reach their bugs
    unreached_keys: frozenset[str] = frozenset()

    @property
    def function_keys(self) -> frozenset[str]:
        return self.names.function_keys

    def fingerprint(self) -> str:
        """A hash of everything here, the same in every process (sets are sorted, so Python's
        per-process string hashing does not change it): the cache key of the per-file results."""
        return blake2b(repr(_canonical(self.__dict__)).encode(), digest_size=16).hexdigest()

    def inherited(self, base_keys: Iterable[str]) -> Optional[tuple[set[str], set[str]]]:
        """Methods and ctx attributes that the Function classes ``base_keys`` (defined in any
        linted file) provide, with their own bases; None when some of it cannot be known."""
        methods: set[str] = set()
        attrs: set[str] = set()
        pending, seen = list(base_keys), set()
        while pending:
            key = pending.pop()
            if key in seen:
                continue
            seen.add(key)
            members = self.class_members.get(key)
            if members is None or members[1] is None:
                return None
            methods |= members[0]
            attrs |= members[1]
            if key not in self.roots:
                pending.extend(self.bases.get(key, []))
        return methods, attrs

    def literal_kinds(self, class_key: str, position: int) -> Optional[frozenset[str]]:
        """The kinds of literal that every ``.apply(...)`` call of the class in the linted
        files passes at ``position``; None when there is no call, or one passes anything else
        there (a name, an expression, nothing: the default, or a starred argument)."""
        calls = self.apply_arg_kinds.get(class_key)
        if not calls:
            return None
        kinds = set()
        for call in calls:
            if position >= len(call) or "*" in call[: position + 1] or call[position] in ("other", REBOUND):
                return None
            kinds.add(call[position])
        return frozenset(kinds)

    def rebound_at_every_call(self, class_key: str, position: int) -> bool:
        """Every ``.apply(...)`` call of the class in the linted files (one at least) passes a name
        at ``position`` that its statement rebinds to the result: ``k = F.apply(k, v)``."""
        calls = self.apply_arg_kinds.get(class_key)
        return bool(calls) and all(
            position < len(call) and "*" not in call[: position + 1] and call[position] == REBOUND
            for call in calls)

    def defines(self, class_key: str, member: str) -> bool:
        """Does the class, or one of its bases in any linted file, define ``member``? (methods
        only: unlike ``inherited``, a base whose ctx use is unknown still counts)."""
        pending, seen = [class_key], set()
        while pending:
            key = pending.pop()
            if key in seen:
                continue
            seen.add(key)
            members = self.class_members.get(key)
            if members is not None and member in members[0]:
                return True
            pending.extend(self.bases.get(key, []))
        return False

    @staticmethod
    def function_names_of(all_facts: Iterable[FileFacts]) -> set[str]:
        """``merge(...).function_names`` alone, without the rest of a merge (the name table):
        what the engine's rounds need to choose the next files to read. Classes derived from
        torch's Function, then their subclasses, across files, by name."""
        classes = [c for facts in all_facts for c in facts.classes]
        function_names = {name for name, _, direct, _ in classes if direct}
        changed = True
        while changed:  # subclasses of subclasses, across files, by name: which files to read
            changed = False
            for name, bases, _, _ in classes:
                if name not in function_names and any(b in function_names for b in bases):
                    function_names.add(name)
                    changed = True
        return function_names

    @classmethod
    def merge(cls, all_facts: Iterable[tuple[Optional[ModuleName], FileFacts]],
              paths: Optional[dict[str, str]] = None) -> "ProjectFacts":
        """``all_facts``: each file's facts with its module's name (None: a file that only
        contributes grad_fn attributes). ``paths``: module name -> its file, when known: the
        sources of subclassed classes carry it (a subclass's finding points at what it inherits)."""
        all_facts = list(all_facts)
        located = [(module, facts) for module, facts in all_facts if module is not None]
        function_names = cls.function_names_of(facts for _, facts in located)

        symbols: dict[ModuleName, ModuleSymbols] = {}
        for module, facts in located:
            if module in symbols:  # two files of one module name: what either binds
                known = symbols[module]
                facts_symbols = ModuleSymbols({**known.imports, **facts.symbols.imports},
                                              known.star_imports + facts.symbols.star_imports,
                                              {**known.defined, **facts.symbols.defined})
            else:
                facts_symbols = facts.symbols
            symbols[module] = facts_symbols
        table = build_name_table(symbols, function_names)
        keyed = [(f"{module.name}.{name}", module, bases, direct)
                 for module, facts in located for name, _, direct, bases in facts.classes]
        roots = {key for key, _, _, direct in keyed if direct}
        keys = set(roots)
        base_keys: dict[str, set[str]] = {}
        while True:  # what each base means in its module's scope, until nothing changes
            table = table.with_functions(keys)
            scopes = {module: Scope(module, symbols[module], table) for module in symbols}
            new = set()
            for key, module, bases, _ in keyed:
                for base in bases:
                    base_key = scopes[module].function_key(base) if base else None
                    if base_key is not None and base_key != key:
                        base_keys.setdefault(key, set()).add(base_key)
                        if key not in keys:
                            new.add(key)
            if not new:
                break
            keys |= new

        apply_counts: dict[str, list[Optional[int]]] = {}
        apply_kinds: dict[str, list[tuple[str, ...]]] = {}
        gradchecked_names: set[str] = set()
        gradchecked: set[str] = set()
        helpers: dict[str, set[str]] = {}
        members: dict[str, tuple[set[str], Optional[set[str]]]] = {}
        sources: dict[str, Optional[ClassSource]] = {}
        for module, facts in located:
            for name, source in facts.class_sources.items():
                key = f"{module.name}.{name}"
                sources[key] = None if key in sources else source  # two classes of that key: neither
            scope = scopes[module]
            for name, counts in facts.apply_arg_counts.items():
                key = scope.function_key(name)
                if key is not None:
                    apply_counts.setdefault(key, []).extend(counts)
                    apply_kinds.setdefault(key, []).extend(facts.apply_arg_kinds.get(name, ()))
            gradchecked_names |= facts.gradchecked_names
            gradchecked |= {key for key in map(scope.function_key, facts.gradchecked_names) if key is not None}
            for name, applied in facts.helpers.items():
                helpers.setdefault(name, set()).update(k for k in map(scope.function_key, applied) if k is not None)
            for name, (methods, attrs) in facts.class_members.items():
                key = f"{module.name}.{name}"
                if key in members:  # two classes of that key: keep what both agree on knowing
                    old_methods, old_attrs = members[key]
                    attrs = None if attrs is None or old_attrs is None else attrs | old_attrs
                    methods = methods | old_methods
                members[key] = (methods, attrs)
        for _ in range(2):  # helpers calling helpers, two levels
            reached = {k for name in gradchecked_names for k in helpers.get(name, ())}
            gradchecked |= reached
            gradchecked_names |= {k.rpartition(".")[2] for k in reached}
        decorator_effects, unread = _decorator_effects(located, symbols)
        function_bases = {key: sorted(b for b in found if b in keys) for key, found in base_keys.items() if key in keys}
        subclassed = frozenset(b for found in function_bases.values() for b in found)
        reached_names = {name for _, facts in located for name in facts.reached_names}
        reached_keys = subclassed | gradchecked | {k for found in helpers.values() for k in found}
        unreached = frozenset(
            key for key in keys
            if key not in reached_keys and key.rpartition(".")[2] not in reached_names
            and _is_private(key.rpartition(".")[0]))
        return cls(
            grad_fn_attributes=frozenset(a for _, facts in all_facts for a in facts.grad_fn_attributes),
            names=table,
            bases=function_bases,
            roots=frozenset(roots),
            class_members={key: value for key, value in members.items() if key in keys},
            function_names=frozenset(function_names),
            subclassed_keys=subclassed,
            class_sources={key: _located_source(source, key, paths) for key, source in sources.items()
                           if key in subclassed and source is not None},
            apply_arg_counts=apply_counts,
            apply_arg_kinds=apply_kinds,
            gradchecked_keys=frozenset(gradchecked),
            decorator_effects=decorator_effects,
            unread_modules=unread,
            unreached_keys=unreached,
        )


def dependent_classes(project: ProjectFacts, given: list[tuple[ModuleName, FileFacts]]
                      ) -> dict[str, tuple[str, str, str]]:
    """The Function classes of other modules whose lint reads something of the ``given`` files
    (each with its module's name), by key -> (the given module, what of it they read, the name
    of the class there they derive from, or "" for calls): a subclass,
    at any depth, of a Function class defined there (it inherits its methods and signature),
    and a class whose ``.apply(...)`` calls are written there (what callers pass decides which
    inputs are tensors, and AGL101's count). What a pre-commit hook on a staged base must also
    report (``engine``'s dependents). A gradcheck call is not a dependence: it can only silence
    AGL502, never cause a finding."""
    given_modules = {module.name for module, _ in given}
    defined = {f"{module.name}.{name}": module.name for module, facts in given for name, *_ in facts.classes}
    why: dict[str, tuple[str, str, str]] = {}
    changed = True
    while changed:  # subclasses of subclasses: each names the given module its chain reaches
        changed = False
        for key, bases in project.bases.items():
            if key in why or key in defined:
                continue
            for base in bases:
                if base in defined:
                    name = base.rpartition(".")[2]
                    why[key] = (defined[base], f"its base class {name} is", name)
                elif base in why:
                    why[key] = why[base]
                else:
                    continue
                changed = True
                break
    for module, facts in given:
        scope = Scope(module, facts.symbols, project.names)
        for name in facts.apply_arg_counts:
            key = scope.function_key(name)
            if key is not None and key not in defined and key not in why:
                why[key] = (module.name, f".apply calls of {key.rpartition('.')[2]} are", "")
    return {key: reason for key, reason in why.items() if key.rpartition(".")[0] not in given_modules}


def _located_source(source: ClassSource, key: str, paths: Optional[dict[str, str]]) -> ClassSource:
    """``source`` with the path of its module's file, when ``paths`` knows it."""
    path = paths.get(key.rpartition(".")[0]) if paths else None
    return replace(source, path=path) if path else source


def _is_private(module: str) -> bool:
    """A module for its package's own use: a part of its dotted name starts with one ``_``."""
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


def _decorator_effects(located: list[tuple[ModuleName, FileFacts]], symbols: dict[ModuleName, ModuleSymbols]
                       ) -> tuple[dict[str, str], frozenset[str]]:
    """What each decorator written on an autograd method does, followed through the project's
    imports and re-exports; and the modules of the linted packages still to read for it."""
    used = [(module, facts.decorators_used) for module, facts in located if facts.decorators_used]
    if not used:
        return {}, frozenset()
    resolver = DecoratorResolver(
        {module.name: module for module, _ in located},
        {module.name: bound for module, bound in symbols.items()},
        {module.name: facts.decorator_defs for module, facts in located if facts.decorator_defs},
    )
    effects: dict[str, str] = {}
    unread: set[str] = set()
    for module, written_names in used:
        for written in written_names:
            effect, missing = resolver.resolve(written, module.name)
            if missing is not None:  # the engine reads it if it is one of the project's files
                unread.add(missing)
            effects[f"{module.name}:{written}"] = effect
    return effects, frozenset(unread)


def facts_from_index(index: ModuleIndex, text: Optional[str] = None,
                     text_lines: Optional[Callable[[], list[str]]] = None) -> FileFacts:
    """``text``: the file's text, for ``class_sources``; ``text_lines``: gives its lines when the
    caller keeps them (``SourceFile.lines``: split once for these facts and the file's lint)."""
    facts = FileFacts()
    imports = tuple(sorted(index.imports.names.items()))
    star_imports = tuple(sorted(index.imports.star_modules))
    lines: Optional[list[str]] = None
    for info in index.classes:
        # `nn.Conv2d` resolves to torch.nn.Conv2d: it is not the project's Function `Conv2d`.
        base_names = [
            q.rsplit(".", 1)[-1] for q in info.qualified_bases
            if q and (q in FUNCTION_BASES or not q.startswith("torch."))
        ]
        direct = any(q in FUNCTION_BASES for q in info.qualified_bases)
        facts.classes.append((info.name, base_names, direct or info.is_function, list(info.bases)))
        facts.class_members[info.name] = (set(info.methods), _ctx_attributes_set(info.node))
        if text is not None and base_names and not _AUTOGRAD_METHODS.isdisjoint(info.methods):
            if lines is None:
                lines = text_lines() if text_lines is not None else source_lines(text)
            source = _class_text(lines, info.node)
            if source is not None:
                facts.class_sources[info.name] = ClassSource(source[0], source[1], imports, star_imports,
                                                             info.node.col_offset)
    facts.symbols = index.symbols
    if text is not None and "." in text:
        facts.reached_names = _reached_names(text)
    facts.decorator_defs = definitions(index.tree) if index.tree is not None else {}
    for info in index.classes:
        for method in info.node.body:
            if isinstance(method, ast.FunctionDef) and method.name in _AUTOGRAD_METHODS:
                for decorator in method.decorator_list:
                    written = dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator)
                    if written and written not in ("staticmethod", "classmethod"):
                        facts.decorators_used.add(written)
    facts.apply_arg_counts = {k: list(v) for k, v in index.apply_arg_counts.items()}
    facts.apply_arg_kinds = {k: list(v) for k, v in index.apply_arg_kinds.items()}
    for call in index.gradcheck_calls:
        facts.gradchecked_names |= call.reached_names
    apply_lines = sorted(line for lines in index.apply_lines.values() for line in lines)
    for statement in index.tree.body if apply_lines else ():
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            applied = {
                name for name, lines in index.apply_lines.items()
                if any(statement.lineno <= line <= (statement.end_lineno or statement.lineno) for line in lines)
            }
            if applied:
                facts.helpers[statement.name] = applied
    for alias, class_name in index.aliases.items():  # `cube = Cube.apply`
        facts.helpers.setdefault(alias, set()).add(class_name)
    return facts


_CTX_METHODS = ("forward", "setup_context", "backward", "jvp", "vjp")
# `X.apply`, `X.forward(`, ... (a composite Function may run another's forward and backward itself).
# The pattern starts at the dot: one written `(\w+)[ \t]*\.` is tried at every character of the
# file, and took most of the project facts' time on torch's large modules.
_REACHED_METHOD = re.compile(r"\.[ \t]*(?:apply|forward|backward|setup_context|jvp|vjp)\b")


def _reached_names(text: str) -> set[str]:
    """The names written before ``.apply``, ``.forward``, ... in ``text``."""
    names = set()
    for match in _REACHED_METHOD.finditer(text):
        end = match.start()
        while end and text[end - 1] in " \t":
            end -= 1
        start = end
        while start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        if start < end:
            names.add(text[start:end])
    return names


_AUTOGRAD_METHODS = frozenset(_CTX_METHODS)


def _class_text(lines: list[str], node: ast.ClassDef) -> Optional[tuple[str, int]]:
    """The class statement's text dedented to column 0, and the file line it starts on; None when
    a line of it is not indented as deep as the class (a string's continuation lines)."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    last = node.end_lineno or node.lineno
    indent = node.col_offset
    kept = []
    for text in lines[first - 1 : last]:
        if indent and text.strip() and text[:indent].strip(" \t"):
            return None
        kept.append(text[indent:] if text.strip() else text.lstrip(" \t") or "\n")
    source = "".join(kept)
    return (source if source.endswith("\n") else source + "\n"), first


def _ctx_attributes_set(node: ast.ClassDef) -> Optional[set[str]]:
    """ctx attributes a class's methods set (``ctx.x = ...``, ``setattr(ctx, "x", ...)``), read
    from ``ast`` for the first pass; None when ctx is handed to other code."""
    attrs: set[str] = set()
    for method in node.body:
        if not isinstance(method, ast.FunctionDef) or method.name not in _CTX_METHODS:
            continue
        params = method.args.posonlyargs + method.args.args
        is_classmethod = any(isinstance(d, ast.Name) and d.id == "classmethod" for d in method.decorator_list)
        params = params[1:] if is_classmethod else params
        if not params:
            continue
        ctx = params[0].arg
        for sub in walk(method):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == ctx:
                if isinstance(sub.ctx, ast.Store):
                    attrs.add(sub.attr)
                elif sub.attr == "__dict__":
                    return None
            elif isinstance(sub, ast.Call):
                for arg in sub.args:
                    if isinstance(arg, ast.Name) and arg.id == ctx:
                        literal = sub.args[1] if len(sub.args) > 1 else None
                        if (isinstance(sub.func, ast.Name) and sub.func.id == "setattr"
                                and isinstance(literal, ast.Constant) and isinstance(literal.value, str)):
                            attrs.add(literal.value)
                        else:
                            return None
    return attrs


def _canonical(value):
    if is_dataclass(value) and not isinstance(value, type):
        return [(f.name, _canonical(getattr(value, f.name))) for f in fields(value)]
    if isinstance(value, dict):
        return sorted((str(k), _canonical(v)) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return sorted(map(str, value))
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value
