"""One Python file and everything the lint derives from it, each stage computed on first use.

    path -> bytes (their hash, for the cache) -> text -> lines
         -> ``ast`` tree -> skeleton (one walk of its statements) -> module index
         -> libcst trees of its Function classes -> ``ModuleAnalysis`` (what the rules read)

The pipeline (``autograd_lint.pipeline``), the fixers' ``fix_available`` pass (``fix.context``)
and ``engine.lint_text`` share one ``SourceFile`` per file, so nothing is read, parsed or walked
twice. A stage that cannot be done (an unreadable file, a syntax error) leaves ``problem``: the
message of the file's AGL000, and the stages after it are None.

libcst and the models are imported where they are first needed: a run answered from the cache,
and the first step of any run, never load them.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Optional

from autograd_lint.analysis.module_index import (
    ModuleIndex, ModuleSkeleton, build_module_index, collect_skeleton, light_index,
)
from autograd_lint.analysis.names import ModuleName, Scope, module_name_of
from autograd_lint.analysis.project import ProjectFacts
from autograd_lint.cache import content_hash
from autograd_lint.source import SourceError, read_bytes, source_lines, text_of

if TYPE_CHECKING:
    from autograd_lint.analysis.class_model import Method
    from autograd_lint.analysis.kernels import ModuleKernels
    from autograd_lint.analysis.module import ModuleAnalysis
    from autograd_lint.analysis.snippet import ParsedClass


class SourceFile:
    """One file of the run (or one text handed to ``engine.lint_text``), from its bytes up."""

    def __init__(self, path: str, text: Optional[str] = None, tree: Optional[ast.Module] = None,
                 max_file_size: Optional[int] = None, hashing: bool = False) -> None:
        """``text``, ``tree``: what the caller has already (flake8 hands both), else the file is
        read and parsed here when first asked. ``max_file_size``: in bytes, None for no limit.
        ``hashing``: keep the hash of the bytes (``digest``), the cache's key: a run without a
        cache skips it."""
        self.path = path
        self.max_file_size = max_file_size
        self.hashing = hashing
        self.digest: Optional[str] = None
        self.problem: Optional[str] = None  # why it cannot be read or parsed, for its AGL000
        # Where the AGL000 goes: (line, 1-based column) where Python says a syntax error is.
        self.problem_at: tuple[int, int] = (1, 1)
        self._text = text
        self._tree = tree
        self._skeleton: Optional[ModuleSkeleton] = None
        # Set by ``keep_only_index``: (the Function names it was built for, the index).
        self._light_index: Optional[tuple[frozenset[str], ModuleIndex]] = None
        # libcst trees by (line, column) of their `class` statement, and module-level functions
        # by name: parsed once, whichever analysis of the file asks (a tree is never changed).
        self._parsed_classes: dict[tuple[int, int], ParsedClass] = {}
        self._trees_taken: set = set()  # the class trees its classes use (``snippet.parse_class``)
        self._module_functions: dict[str, Optional[Method]] = {}
        self._top_level_defs: Optional[dict[str, list[int]]] = None  # name -> lines (snippet.top_level_defs)

    # --- text -----------------------------------------------------------------------------
    def readable(self) -> bool:
        """Reads the file if it is not read yet; False when it cannot be (``problem``)."""
        if self._text is None and self.problem is None:
            try:
                data = read_bytes(self.path, self.max_file_size)
                self.digest = content_hash(data) if self.hashing else None
                self._text = text_of(data)
            except SourceError as error:
                self.problem = error.message
        return self._text is not None

    @property
    def text(self) -> str:
        """The decoded text; SourceError when the file cannot be read."""
        if self._text is None and not self.readable():
            raise SourceError(self.problem or "could not read")
        return self._text

    @cached_property
    def lines(self) -> list[str]:
        """The lines, ends kept, as Python numbers them: split only when asked (most files that
        are linted only for their call sites never need them)."""
        return source_lines(self.text)

    # --- syntax -----------------------------------------------------------------------------
    @property
    def tree(self) -> Optional[ast.Module]:
        """The ``ast`` of the text, parsed when first asked (again after ``keep_only_index``);
        None when the file cannot be read or is not valid Python (``problem``)."""
        if self._tree is None and self.problem is None and self.readable():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # invalid escape sequences and the like
                    self._tree = ast.parse(self._text, filename=self.path)
            except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
                self._tree = self._newer_syntax_tree(error)
                if self._tree is None:
                    self.problem = _syntax_message(error)
                    if isinstance(error, SyntaxError) and error.lineno:
                        self.problem_at = (error.lineno, max(error.offset or 1, 1))
                        self._place_after_newer_syntax()
        return self._tree

    # The result must not depend on the Python that runs the linter (``newer_syntax``).
    def _newer_syntax_tree(self, error: Exception) -> Optional[ast.Module]:
        """For a SyntaxError, the tree of the text in older syntax of the same layout, when the
        file is valid for a newer Python."""
        if not isinstance(error, SyntaxError):
            return None
        from autograd_lint.analysis.newer_syntax import parse_newer

        return parse_newer(self._text, self.path)

    def _place_after_newer_syntax(self) -> None:
        """A broken file that also uses newer syntax: the running Python stopped at the newer
        syntax; report the real error, found in the same text with that syntax rewritten."""
        from autograd_lint.analysis.newer_syntax import NEWER_SYNTAX_LINE, error_in_older_layout

        line = self.problem_at[0] if self.problem_at else 0
        if not 0 < line <= len(self.lines) or not NEWER_SYNTAX_LINE.search(self.lines[line - 1]):
            return
        real = error_in_older_layout(self._text)
        if real is not None and real.lineno and real.lineno > line:
            self.problem = _syntax_message(real)
            self.problem_at = (real.lineno, max(real.offset or 1, 1))

    @property
    def skeleton(self) -> ModuleSkeleton:
        """One walk of the tree's statements (``module_index.collect_skeleton``): it does not
        depend on other files, so each index of the file starts from it."""
        if self._skeleton is None:
            self._skeleton = collect_skeleton(self.tree, self.text)
        return self._skeleton

    @cached_property
    def subclassed_names(self) -> Optional[frozenset[str]]:
        """The last name of every base class in the file (``Base`` for ``class A(pkg.Base)``),
        gathered once: a fixer asks it for each finding (None if Python cannot parse the file)."""
        if self.tree is None:
            return None
        return frozenset(
            ast.unparse(base).rsplit(".", 1)[-1]
            for node in ast.walk(self.tree) if isinstance(node, ast.ClassDef)
            for base in node.bases
        )

    # --- the index --------------------------------------------------------------------------
    def facts_index(self) -> ModuleIndex:
        """The index the project-wide facts are read from: Function classes by name alone, and
        without the calls ``MyFn()`` that only the rules need."""
        return build_module_index(self.tree, self.text, skeleton=self.skeleton, instantiations=False)

    def keep_only_index(self, function_names: frozenset[str]) -> None:
        """For when the project's Function names are final (the last round of project facts:
        files that only use Function classes or call gradcheck). Such a file usually defines
        none, and then its lint reads only its index: that is built now and the syntax tree is
        let go (a large test module's tree is the largest thing a worker holds: bench/NOTES.md)."""
        index = build_module_index(self.tree, self.text, function_names, self.skeleton)
        if not index.function_classes:
            self._light_index = (function_names, light_index(index))
            self._tree = self._skeleton = None
            self.__dict__.pop("lines", None)  # (the facts may have split them) split again if asked

    def analysable(self, project: ProjectFacts) -> bool:
        """Is there what ``analysis(project)`` needs: the index kept for the project's Function
        names, or else a syntax tree (parsed now if need be)? False: ``problem`` says why."""
        if self._light_index is not None and self._light_index[0] != project.function_names:
            self._light_index = None  # kept for other names (rare): parse again
        return self._light_index is not None or self.tree is not None

    def _index(self, project: ProjectFacts, module_name: ModuleName) -> ModuleIndex:
        if self._light_index is not None and self._light_index[0] == project.function_names:
            # Built before the project was known: now its names resolve in the project's scope.
            index = self._light_index[1]
            return replace(index, scope=Scope(module_name, index.symbols, project.names))
        return build_module_index(self.tree, self.text, project.function_names, self.skeleton,
                                  names=(module_name, project.names))

    # --- the models -------------------------------------------------------------------------
    def analysis(self, project: ProjectFacts) -> ModuleAnalysis:
        """What the rules read of this file, for these project facts (``ProjectFacts()``: the
        file alone). Built anew at each call, and not kept here: the caller keeps it as long as
        it needs it (the analysis refers to this file, never the other way round). Needs
        ``analysable(project)``; libcst parses each Function class once per file."""
        import libcst as cst

        from autograd_lint.analysis.class_model import FunctionModel, build_function_model
        from autograd_lint.analysis.module import ModuleAnalysis

        module_name = module_name_of(self.path)
        index = self._index(project, module_name)
        analysis = ModuleAnalysis(source=self, index=index, project=project)
        local_models: dict[str, FunctionModel] = {}
        for info in index.function_classes:
            try:
                parsed = self.parsed_class(info.node)
            except (cst.ParserSyntaxError, StopIteration):
                # libcst's own message gives positions inside the class snippet: not useful here.
                analysis.unparsed.append((info.node.lineno, info.name))
                continue
            model = build_function_model(info, parsed, index.imports.qualify, local_models, project,
                                         key=f"{module_name.name}.{info.name}")
            model.module_function = self.module_function
            model.kernels_of = lambda: self.kernels  # a cached_property: walked once, if asked
            local_models[info.name] = model
            analysis.classes.append(model)
        return analysis

    @cached_property
    def kernels(self) -> "ModuleKernels":
        """What the file says about custom kernels (Triton, extensions: ``analysis.kernels``)."""
        from autograd_lint.analysis.kernels import module_kernels

        if self.tree is None:
            return module_kernels(None, None)
        return module_kernels(self.tree, self.skeleton.imports, self.text)

    def parsed_class(self, node: ast.ClassDef) -> ParsedClass:
        """The libcst tree of the class ``node`` (of this file's ``ast``), parsed on first ask;
        raises ``cst.ParserSyntaxError`` when libcst cannot parse it."""
        from autograd_lint.analysis.snippet import parse_class

        key = (node.lineno, node.col_offset)
        parsed = self._parsed_classes.get(key)
        if parsed is None:
            parsed = self._parsed_classes[key] = parse_class(self.lines, node, self._trees_taken)
        return parsed

    def module_function(self, name: str) -> Optional[Method]:
        """The file's module-level ``def name``, parsed on first ask (Function classes call few);
        None when there is no such function or it does not parse alone."""
        if name not in self._module_functions:
            from autograd_lint.analysis.class_model import method_of
            from autograd_lint.analysis.snippet import parse_function, top_level_defs

            if self._top_level_defs is None:
                self._top_level_defs = top_level_defs(self.lines)
            starts = self._top_level_defs.get(name)
            parsed = parse_function(self.lines, name, starts) if starts else None
            self._module_functions[name] = method_of(parsed.node, "<module>", parsed) if parsed is not None else None
        return self._module_functions[name]


def _syntax_message(error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        column = f", column {error.offset})" if error.offset else ")"
        where = f" (line {error.lineno}{column}" if error.lineno else ""
        return f"could not parse: {type(error).__name__}: {error.msg}{where}"
    if isinstance(error, (MemoryError, RecursionError)):
        return "could not parse: the file is nested too deeply for the parser"
    return f"could not parse: {error}"
