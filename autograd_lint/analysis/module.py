"""Everything the rules see about one file: its index, its Function class models, the project."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Optional

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method, build_function_model, method_of
from autograd_lint.analysis.module_index import CallSite, ModuleIndex, ModuleSkeleton, build_module_index
from autograd_lint.analysis.names import Scope, module_name_of
from autograd_lint.analysis.project import ProjectFacts
from autograd_lint.analysis.snippet import ParsedClass, Span, parse_class, parse_function
from autograd_lint.analysis.syntax import source_lines
from autograd_lint.findings import Finding


@dataclass
class ModuleAnalysis:
    path: str
    text: str
    index: ModuleIndex
    project: ProjectFacts
    classes: list[FunctionModel] = field(default_factory=list)
    # Classes libcst could not parse (its grammar lags CPython's, e.g. a line holding only a
    # backslash continuation): (class line, class name).
    unparsed: list[tuple[int, str]] = field(default_factory=list)

    @cached_property
    def _module_functions(self) -> dict[str, Optional[Method]]:
        return {}

    def module_function(self, name: str) -> Optional[Method]:
        """The file's module-level ``def name``, parsed on first ask (Function classes call few)."""
        functions = self._module_functions
        if name not in functions:
            parsed = parse_function(self.lines, name) if f"def {name}(" in self.text else None
            functions[name] = method_of(parsed.node, "<module>", parsed) if parsed is not None else None
        return functions[name]

    @cached_property
    def lines(self) -> list[str]:
        """The file's lines, ends kept: split only when asked (most files that are linted only
        for their call sites never need them)."""
        return source_lines(self.text)

    @property
    def scope(self) -> Scope:
        """Resolves the names written in this module (``names``)."""
        return self.index.scope

    def key_of(self, model: FunctionModel) -> str:
        """The project-wide key of a Function class of this module (``names``)."""
        return f"{self.index.scope.module.name}.{model.name}"

    def finding(
        self,
        code: str,
        span: Span | CallSite,
        message: str,
        model: Optional[FunctionModel] = None,
        method: Optional[Method] = None,
        severity: str = "",
    ) -> Finding:
        return Finding(
            path=self.path,
            line=span.line,
            column=span.column,
            end_line=span.end_line,
            end_column=span.end_column,
            code=code,
            message=message,
            function_class=model.name if model is not None else None,
            method=method.name if method is not None else None,
            level=severity,
        )

    def at(self, code: str, model: FunctionModel, method: Optional[Method], node: cst.CSTNode, message: str,
           severity: str = "") -> Finding:
        """A finding at ``node`` of ``method`` (or of the class statement when method is None);
        ``severity``: its own, for a rule graded by harm (else the catalogue's)."""
        span = method.span(node) if method is not None else model.parsed.span(node)
        return self.finding(code, span, message, model, method, severity)

    def at_def(self, code: str, model: FunctionModel, method: Method, message: str) -> Finding:
        """A finding on the ``def`` line of a method (not its decorators)."""
        whole = method.span(method.node)  # libcst starts a FunctionDef at `def`, after decorators
        name = method.span(method.node.name)
        return self.finding(code, Span(whole.line, whole.column, name.end_line, name.end_column), message, model, method)

    def at_class(self, code: str, model: FunctionModel, message: str) -> Finding:
        node = model.info.node
        return self.finding(code, Span(node.lineno, node.col_offset + 1, node.lineno, node.col_offset + 1),
                            message, model)


def analyse_module(path: str, text: str, tree: Optional[ast.Module], project: ProjectFacts,
                   skeleton: Optional[ModuleSkeleton] = None, index: Optional[ModuleIndex] = None,
                   parsed: Optional[dict[tuple[int, int], ParsedClass]] = None) -> ModuleAnalysis:
    """``index``: the module's index built for ``project.function_names`` already (then ``tree``
    is not needed). ``parsed``: classes libcst has parsed already, by (line, column) of their
    ``class`` statement (see ``parsed_classes``): not parsed again."""
    module_name = module_name_of(path)
    if index is None:
        index = build_module_index(tree, text, project.function_names, skeleton,
                                   names=(module_name, project.names))
    else:  # built before the project was known (a file without Function classes)
        index = replace(index, scope=Scope(module_name, index.symbols, project.names))
    analysis = ModuleAnalysis(path=path, text=text, index=index, project=project)
    local_models: dict[str, FunctionModel] = {}
    for info in index.function_classes:
        try:
            known = parsed.get((info.node.lineno, info.node.col_offset)) if parsed else None
            snippet = known if known is not None else parse_class(analysis.lines, info.node)
        except (cst.ParserSyntaxError, StopIteration):
            # libcst's own message gives positions inside the class snippet: not useful here.
            analysis.unparsed.append((info.node.lineno, info.name))
            continue
        model = build_function_model(info, snippet, index.imports.qualify, local_models, project,
                                     key=f"{module_name.name}.{info.name}")
        model.module_function = analysis.module_function
        local_models[info.name] = model
        analysis.classes.append(model)
    return analysis


def parsed_classes(analysis: ModuleAnalysis) -> dict[tuple[int, int], ParsedClass]:
    """The libcst trees of the analysis's Function classes, for ``analyse_module(parsed=...)``
    (a ParsedClass is never changed once built: two models can share it)."""
    return {(model.info.node.lineno, model.info.node.col_offset): model.parsed for model in analysis.classes}
