"""Name resolution (``analysis.names``): what a base class or a called name means in its module.

The project facts are built here as the engine builds them (each file's ``FileFacts`` from its
module index, merged with the module names its path gives), over files written to a temporary
tree; the last tests run the real CLI, cold and then from its cache."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

from autograd_lint.analysis.module_index import build_module_index
from autograd_lint.analysis.names import ModuleName, Scope, absolute, module_name_of
from autograd_lint.analysis.project import ProjectFacts, facts_from_index
from conftest import run_cli

FUNCTION = """\
import torch


class {name}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g
"""


def write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def project_of(root: Path) -> tuple[ProjectFacts, dict[str, Scope]]:
    """The merged facts of every file under ``root``, and each file's scope (by relative path)."""
    facts, indexes = [], {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        index = build_module_index(ast.parse(text), text)
        indexes[path.relative_to(root).as_posix()] = (module_name_of(str(path)), index)
        facts.append((module_name_of(str(path)), facts_from_index(index)))
    project = ProjectFacts.merge(facts)
    scopes = {rel: Scope(module, index.symbols, project.names) for rel, (module, index) in indexes.items()}
    return project, scopes


def test_module_names_follow_packages(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/mod.py": "",
                     "scripts/run.py": "", "scripts/helpers/__init__.py": ""})
    assert module_name_of(str(tmp_path / "pkg/sub/mod.py")) == ModuleName("pkg.sub.mod")
    assert module_name_of(str(tmp_path / "pkg/sub/__init__.py")) == ModuleName("pkg.sub", is_package=True)
    assert module_name_of(str(tmp_path / "scripts/run.py")) == ModuleName("run")  # no __init__: top level
    assert module_name_of(str(tmp_path / "scripts/helpers/__init__.py")) == ModuleName("helpers", is_package=True)


def test_relative_imports_resolve_against_the_package():
    module = ModuleName("pkg.sub.mod")
    assert absolute(".ops.Fn", module) == "pkg.sub.ops.Fn"
    assert absolute(".Fn", module) == "pkg.sub.Fn"
    assert absolute("..Fn", module) == "pkg.Fn"
    assert absolute("...Fn", module) is None  # above the top-level package
    assert absolute(".ops.Fn", ModuleName("pkg.sub", is_package=True)) == "pkg.sub.ops.Fn"
    assert absolute("torch.autograd.Function", module) == "torch.autograd.Function"


def test_a_local_class_shadows_a_function_class_of_another_package(tmp_path):
    """torchgen/model.py's own `class Type:` is not torch's Function `Type`."""
    write(tmp_path, {
        "torch/__init__.py": "",
        "torch/autograd/__init__.py": "",
        "torch/autograd/tensor.py": FUNCTION.format(name="Type"),
        "torchgen/__init__.py": "",
        "torchgen/model.py": "class Type:\n    pass\n\n\nclass BaseType(Type):\n    pass\n",
        "torchgen/api.py": "from torchgen.model import BaseType, Type\n\nBaseType()\n",
    })
    project, scopes = project_of(tmp_path)
    assert project.function_keys == {"torch.autograd.tensor.Type"}
    assert scopes["torchgen/api.py"].function_key("BaseType") is None
    assert scopes["torchgen/api.py"].function_key("Type") is None
    assert scopes["torchgen/model.py"].function_key("Type") is None
    # By name alone the file's own definition wins, too.
    assert "BaseType" in project.function_names  # which files to read: a superset


def test_imports_decide_what_a_name_means(tmp_path):
    write(tmp_path, {
        "ops.py": FUNCTION.format(name="Scale"),
        "shapes.py": "class Scale:\n    pass\n",
        "uses_shapes.py": "from shapes import Scale\n",
        "uses_ops.py": "import ops\nfrom ops import Scale as S\n",
        "aliases.py": "import ops\nAliasOfScale = ops.Scale\n",
    })
    _, scopes = project_of(tmp_path)
    assert scopes["uses_shapes.py"].function_key("Scale") is None
    assert scopes["uses_ops.py"].function_key("S") == "ops.Scale"
    assert scopes["uses_ops.py"].function_key("ops.Scale") == "ops.Scale"
    assert scopes["aliases.py"].function_key("AliasOfScale") == "ops.Scale"


def test_relative_imports_and_reexports_through_two_packages(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "from .sub import Fn\n",
        "pkg/sub/__init__.py": "from .ops import *\n",
        "pkg/sub/ops.py": FUNCTION.format(name="Fn"),
        "pkg/sub/user.py": "from .ops import Fn as Local\nfrom .. import sub\n",
        "app.py": "from pkg import Fn\n",
    })
    project, scopes = project_of(tmp_path)
    assert project.function_keys == {"pkg.sub.ops.Fn"}
    assert scopes["app.py"].function_key("Fn") == "pkg.sub.ops.Fn"
    assert scopes["pkg/sub/user.py"].function_key("Local") == "pkg.sub.ops.Fn"
    assert scopes["pkg/sub/user.py"].function_key("sub.Fn") == "pkg.sub.ops.Fn"


def test_a_fallback_value_does_not_hide_the_import(tmp_path):
    write(tmp_path, {
        "ops.py": FUNCTION.format(name="Fused"),
        "user.py": "try:\n    from ops import Fused\nexcept ImportError:\n    Fused = None\n",
    })
    _, scopes = project_of(tmp_path)
    assert scopes["user.py"].function_key("Fused") == "ops.Fused"


def test_a_subclass_in_another_module_is_keyed_by_its_own_module(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": FUNCTION.format(name="Base"),
        "pkg/derived.py": "from .base import Base\n\n\nclass Derived(Base):\n    pass\n",
        "other/__init__.py": "",
        "other/derived.py": "class Base:\n    pass\n\n\nclass Derived(Base):\n    pass\n",
    })
    project, _ = project_of(tmp_path)
    assert project.function_keys == {"pkg.base.Base", "pkg.derived.Derived"}
    assert project.bases == {"pkg.derived.Derived": ["pkg.base.Base"]}
    assert project.subclassed_keys == {"pkg.base.Base"}


def test_name_alone_only_within_related_packages_and_only_when_unique(tmp_path):
    write(tmp_path, {
        "alpha/__init__.py": "",
        "alpha/ops.py": FUNCTION.format(name="Solo") + FUNCTION.format(name="Twice").replace("import torch", ""),
        "alpha/more.py": FUNCTION.format(name="Twice"),
        "alpha/user.py": "from somewhere_else import *\n",
        "beta/__init__.py": "",
        "beta/user.py": "from somewhere_else import *\n",
        "gamma/__init__.py": "",
        "gamma/user.py": "import alpha\nfrom somewhere_else import *\n",
    })
    _, scopes = project_of(tmp_path)
    assert scopes["alpha/user.py"].function_key("Solo") == "alpha.ops.Solo"
    assert scopes["alpha/user.py"].function_key("Twice") is None  # two of them: ambiguous
    assert scopes["beta/user.py"].function_key("Solo") is None  # beta and alpha do not import each other
    assert scopes["gamma/user.py"].function_key("Solo") == "alpha.ops.Solo"


def test_an_import_from_outside_the_linted_tree_matches_a_module_of_the_same_tail(tmp_path):
    """``src/mylib/ops.py`` without ``__init__.py`` is module ``ops``; tests import ``mylib.ops``."""
    write(tmp_path, {
        "src/mylib/ops.py": FUNCTION.format(name="MyFn"),
        "tests/test_ops.py": "from mylib.ops import MyFn\nfrom torch.nn import MyFn as TorchOne\n",
    })
    _, scopes = project_of(tmp_path)
    assert scopes["tests/test_ops.py"].function_key("MyFn") == "ops.MyFn"
    assert scopes["tests/test_ops.py"].function_key("TorchOne") is None


def _agl104(tmp_path: Path, *args: str) -> list[tuple[str, int]]:
    result = run_cli("--format", "json", "--select", "AGL104", *args, "tree", cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return sorted((Path(f["path"]).as_posix(), f["line"]) for f in json.loads(result.stdout)["findings"])


def test_the_cache_follows_a_change_of_what_a_name_means_in_another_file(tmp_path):
    """user.py does not change; what its `Scale` means does (shapes.py becomes a Function class,
    then pkg's re-export moves): the cached result of user.py must not be reused."""
    write(tmp_path / "tree", {
        "shapes.py": "class Scale:\n    pass\n",
        "user.py": "from shapes import Scale\nfrom pkg import Fn\n\nScale()\nFn()\n",
        "pkg/__init__.py": "from .plain import Fn\n",
        "pkg/plain.py": "class Fn:\n    pass\n",
        "pkg/ops.py": FUNCTION.format(name="Fn"),
    })
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert _agl104(tmp_path, "--no-cache") == _agl104(tmp_path, *cache) == []
    write(tmp_path / "tree", {"shapes.py": FUNCTION.format(name="Scale")})
    assert _agl104(tmp_path, *cache) == _agl104(tmp_path, "--no-cache") == [("tree/user.py", 4)]
    write(tmp_path / "tree", {"pkg/__init__.py": "from .ops import Fn\n"})
    assert _agl104(tmp_path, *cache) == _agl104(tmp_path, "--no-cache") == [("tree/user.py", 4), ("tree/user.py", 5)]


def test_the_cache_tells_two_copies_of_one_file_apart(tmp_path):
    """The same bytes in two packages: `from .ops import Fn` means a Function class in one, a
    plain class in the other."""
    user = "from .ops import Fn\n\nFn()\n"
    write(tmp_path / "tree", {
        "one/__init__.py": "", "one/ops.py": FUNCTION.format(name="Fn"), "one/user.py": user,
        "two/__init__.py": "", "two/ops.py": "class Fn:\n    pass\n", "two/user.py": user,
    })
    cache = ["--cache-dir", str(tmp_path / "cache")]
    cold = _agl104(tmp_path, *cache)
    assert cold == [("tree/one/user.py", 3)]
    # Another file (that says nothing of Functions): not the same run, so the per-file results
    # come from the cache, each under its own module's name.
    write(tmp_path / "tree", {"notes.py": "x = 1\n"})
    assert _agl104(tmp_path, *cache) == cold


def test_imports_across_folders_without_init_files(tmp_path):
    """Namespace packages (no ``__init__.py``): each file is a top-level module by its path, and
    imports written for the package find its modules by their tail."""
    write(tmp_path / "repo", {
        "mylib/__init__.py": "from .ops import MyFn\n",
        "mylib/ops.py": FUNCTION.format(name="MyFn"),
        "nslib/kernels.py": FUNCTION.format(name="Kernel"),
        "nslib/layers.py": "from .kernels import Kernel\n",
        "tests/test_lib.py": "from mylib import MyFn\n",
    })
    (tmp_path / "repo" / "__init__.py").write_text("")  # the root is a package: modules are repo.*
    _, scopes = project_of(tmp_path / "repo")
    assert scopes["nslib/layers.py"].function_key("Kernel") == "kernels.Kernel"
    # `tests` is no package, so test_lib is a top-level module: `mylib` is repo.mylib's tail.
    assert scopes["tests/test_lib.py"].function_key("MyFn") == "repo.mylib.ops.MyFn"
