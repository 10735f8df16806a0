"""The package's import graph: layers without cycles (docs/architecture.md).

From the top down; a module may import from its own layer and the layers below it, never above:
1. fronts: ``__main__``, ``cli``, ``flake8_plugin``, ``fix.driver`` (``--fix``), ``dynamic``
   (``--dynamic``), ``server`` (``autograd-lint server``, the language server);
2. ``engine``: which files each step sees, the cache;
3. ``parallel``: the worker pool and the early helper;
4. ``pipeline``: linting one file;
5. ``fix`` (all but the driver): ``fix_available``, the fixers;
6. ``rules``;
7. ``analysis``: the per-file object (``analysis.source_file``) and the model the rules read;
8. ``findings`` and ``catalogue``.
Small helpers outside the layers (``source``, ``cache``, ``selection``, ``suppression``, ...) may be
imported from anywhere, but a chain through them counts: a lower layer may not reach a higher one
through a helper either.

Every import counts, those inside functions too (they run; they are deferred only to keep
libcst out of runs that do not need it), except those under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import graphlib

import grimp
import pytest

PACKAGE = "autograd_lint"
FIX_DRIVER = "autograd_lint.fix.driver"
FRONTS = {"autograd_lint.__main__", "autograd_lint.cli", "autograd_lint.flake8_plugin", FIX_DRIVER,
          "autograd_lint.dynamic", "autograd_lint.server", "autograd_lint.server.language_server"}


def _build() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE, exclude_type_checking_imports=True, cache_dir=None)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return _build()


def _layers(graph: grimp.ImportGraph) -> list[grimp.Layer]:
    # The fix package minus its driver (a layer of whole packages could not leave it out).
    fix_available = graph.find_descendants("autograd_lint.fix") - {FIX_DRIVER}
    return [
        grimp.Layer(*sorted(FRONTS), independent=False),
        grimp.Layer("autograd_lint.engine"),
        grimp.Layer("autograd_lint.run_steps"),
        grimp.Layer("autograd_lint.parallel"),
        grimp.Layer("autograd_lint.pipeline"),
        grimp.Layer(*sorted(fix_available), independent=False),
        grimp.Layer("autograd_lint.rules"),
        grimp.Layer("autograd_lint.analysis"),
        grimp.Layer("autograd_lint.findings", "autograd_lint.catalogue", independent=False),
    ]


def _cycle(graph: grimp.ImportGraph) -> list[str]:
    """One import cycle among the package's modules, or [] when there is none."""
    sorter = graphlib.TopologicalSorter({module: graph.find_modules_directly_imported_by(module)
                                         for module in graph.modules})
    try:
        sorter.prepare()
    except graphlib.CycleError as error:
        return error.args[1]
    return []


def test_the_import_graph_has_no_cycle(graph: grimp.ImportGraph):
    assert _cycle(graph) == []


def test_only_the_fronts_import_the_engine(graph: grimp.ImportGraph):
    assert graph.find_modules_that_directly_import("autograd_lint.engine") <= FRONTS


def test_no_layer_imports_a_layer_above_it(graph: grimp.ImportGraph):
    illegal = graph.find_illegal_dependencies_for_layers(layers=_layers(graph))
    assert not illegal, [
        (dependency.importer, dependency.imported, [route.heads for route in dependency.routes])
        for dependency in illegal
    ]


def test_the_checks_see_a_cycle_and_an_upward_import():
    """The checks above would fail on an import added against the rules, one inside a function
    included (the pipeline importing the engine lazily)."""
    graph = _build()
    graph.add_import(importer="autograd_lint.pipeline", imported="autograd_lint.engine", line_number=1,
                     line_contents="    from autograd_lint.engine import lint_text")
    assert "autograd_lint.pipeline" in _cycle(graph)
    assert graph.find_modules_that_directly_import("autograd_lint.engine") - FRONTS == {"autograd_lint.pipeline"}
    assert graph.find_illegal_dependencies_for_layers(layers=_layers(graph))


def test_function_level_imports_are_in_the_graph(graph: grimp.ImportGraph):
    # pipeline imports the rules inside a function (libcst loads only when a file is linted)
    assert graph.direct_import_exists(importer="autograd_lint.pipeline", imported="autograd_lint.rules")
