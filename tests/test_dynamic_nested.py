"""dynamic/nested.py: which classes inside functions can be defined from their own source (the
names of their functions they read), without torch: the end-to-end run is in test_dynamic.py
(fixtures/dynamic/hidden_classes.py)."""

import textwrap
import types

from autograd_lint.dynamic import nested

SOURCE = textwrap.dedent('''
    import math

    SCALE = 2.0

    def factory(factor, mode="a"):
        offset = 1
        class ReadsParameter(Base):
            def forward(ctx, x):
                return x * factor

        class ReadsModule(Base):
            @staticmethod
            def forward(ctx, x):
                return ReadsModule.helper(x) * SCALE * math.pi

            @staticmethod
            def helper(x):
                return x

        class ReadsLocalInBase(Base if offset else object):
            pass

        class Counts(Base):
            def forward(ctx, x):
                nonlocal offset
                offset += 1

        return ReadsParameter

    class Outer:
        def build(self):
            if self:
                class Inner(Base):
                    class Deeper(Base):
                        pass
            return Inner
''')


def by_name() -> dict:
    return {found.node.name: found for found in nested.nested_classes(SOURCE, "<test>")}


def test_the_classes_inside_functions_and_their_names():
    found = by_name()
    assert sorted(found) == ["Counts", "Inner", "ReadsLocalInBase", "ReadsModule", "ReadsParameter"]
    assert found["Inner"].qualname == "Outer.build.<locals>.Inner"
    assert found["Inner"].function == "Outer.build()"
    assert {"factor", "mode", "offset"} <= found["ReadsParameter"].function_locals


def test_what_each_reads_of_its_function():
    found = by_name()
    assert nested.names_read_from_functions(found["ReadsParameter"], SOURCE) == {"factor"}
    # its own name is bound by the function too: inside the class it means the class itself
    assert nested.names_read_from_functions(found["ReadsModule"], SOURCE) == {"ReadsModule"}
    assert nested.names_read_from_functions(found["ReadsLocalInBase"], SOURCE) == {"offset"}
    assert nested.names_read_from_functions(found["Counts"], SOURCE) is None  # `nonlocal`: not alone
    assert nested.names_read_from_functions(found["Inner"], SOURCE) == set()


def test_a_class_is_defined_in_a_copy_of_the_module_namespace():
    module = types.ModuleType("mod")
    module.__file__ = "<test>"
    exec(compile("import math\nSCALE = 2.0\nclass Base:\n    pass\n", "<test>", "exec"), vars(module))
    cls = nested.define(by_name()["ReadsModule"], SOURCE, module)
    assert cls.__qualname__ == "factory.<locals>.ReadsModule"
    assert cls.forward(None, 1.0) == 2.0 * 3.141592653589793
    assert not hasattr(module, "ReadsModule")  # the module's own names are left as they were
    # its code keeps the file's line numbers (the first decorator's line, as Python counts it)
    assert cls.forward.__code__.co_firstlineno == SOURCE.splitlines().index("        @staticmethod") + 1


def test_parameters_with_constant_defaults_bind_to_their_defaults():
    source = textwrap.dedent('''
        import torch
        LIMIT = 4

        def outer(scale=2.0, limit=LIMIT, dtype=torch.float64, made=len("ab"), fixed=1, *, key="k"):
            fixed = fixed + 1
            def inner(scale=None):
                class Uses(Base):
                    pass
            class Direct(Base):
                pass
    ''')
    found = {f.node.name: f for f in nested.nested_classes(source, "<test>")}
    module = types.ModuleType("mod")
    exec(compile("import torch\nLIMIT = 4\n", "<test>", "exec"), vars(module))
    direct = found["Direct"]
    assert nested.default_bindings(direct, {"scale", "limit", "key"}, module) == {
        "scale": 2.0, "limit": 4, "key": "k"}
    import torch
    assert nested.default_bindings(direct, {"dtype"}, module) == {"dtype": torch.float64}
    # a call is not a constant; a reassigned parameter is the function's own value
    assert nested.default_bindings(direct, {"made"}, module) is None
    assert nested.default_bindings(direct, {"fixed"}, module) is None
    # the innermost binding wins: `inner`'s `scale` defaults to None
    assert nested.default_bindings(found["Uses"], {"scale"}, module) == {"scale": None}
