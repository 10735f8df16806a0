"""Custom kernels: the calls through which a Function hands a tensor to code that reads its
memory itself, and which tensors reach them with their layout unchanged (AGL403 asks this of
backward's gradients).

A call is a custom kernel only when the file shows it is one:
- a Triton launch ``kernel[grid](...)``: ``kernel`` is a module-level function of this file
  decorated with ``triton.jit`` (``triton.autotune``/``triton.heuristics`` over it count too), or
  a name imported from another module in a file that imports triton;
- a function of a compiled extension module: a module imported under a name that by
  convention names one (last component ``_C``, ``_ext``, ``amp_C``, or ending in ``_cuda``,
  ``_cpp``, ``_ext``, ``_C``: ``from . import _C``, ``import fused_layer_norm_cuda``), outside
  torch; or a name the file binds to what an extension loader returns:
  ``torch.utils.cpp_extension.load(...)``/``load_inline(...)``, DeepSpeed's ``XBuilder().load()``,
  or any call given such a module's name as its first argument (mmcv's
  ``ext_loader.load_ext('_ext', [...])``, ``importlib.import_module('x_cuda')``);
- ``torch.ops.<namespace>.<op>(...)`` in a namespace that is neither PyTorch's own (``aten``,
  ``prims``...: those ops read any strides) nor one this file defines with ``torch.library``;
- ``t.data_ptr()`` handed to a call: a raw address, read with whatever layout the reader assumes.
Anything else (a Python function of another module, a method of an object) is not known to be a
kernel, and the rules stay silent about it.

A kernel reads a tensor as it is laid out in memory. ``.contiguous()`` is the usual answer; a
kernel given the tensor's own strides (``g.stride(0)``) was written for any layout.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst

from autograd_lint.analysis.ast_walk import dotted_name, walk
from autograd_lint.analysis.class_model import bind_arguments
from autograd_lint.analysis.flow import is_basic_index
from autograd_lint.analysis.syntax import all_nodes, call_keyword, dotted, positional_args

if TYPE_CHECKING:
    from autograd_lint.analysis.class_model import FunctionModel, Method
    from autograd_lint.analysis.module_index import ImportMap

TRITON = "Triton launch"
EXTENSION = "compiled extension"
CUSTOM_OP = "custom op"
POINTER = "raw pointer"

# An imported module that is a compiled extension by its name (the last dotted component).
_EXTENSION_MODULE = re.compile(r"^(?:_C|_ext|amp_C|\w+_(?:cuda|cpp|ext|C))$")
# Modules whose functions take tensors as objects and read their strides (torch._C is aten).
_LAYOUT_AWARE_TOPS = frozenset({"torch", "numpy", "triton", "jax", "cupy", "numba"})
# torch.ops namespaces that PyTorch itself registers: their kernels handle any strides.
TORCH_OP_NAMESPACES = frozenset({
    "aten", "prims", "prim", "quantized", "_quantized", "c10d", "_c10d_functional",
    "_c10d_functional_autograd", "_dtensor", "higher_order", "profiler", "inductor", "mkldnn",
    "onednn", "rngprims", "debugprims", "nvprims", "symm_mem", "fsdp", "streams", "_test",
})
# Calls that take an address only to show or compare it, never to read memory there.
_NOT_READERS = frozenset({"print", "str", "repr", "hex", "format", "hash", "id", "len", "isinstance"})
_EXTENSION_LOADERS = frozenset({"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"})


@dataclass(frozen=True)
class ModuleKernels:
    """What a module says about kernels, from its whole text (``module_kernels``)."""

    # Names the file binds (anywhere: `global` assignments in helpers count) to an extension
    # module returned by a loader call.
    loaded_extensions: frozenset[str] = frozenset()
    # Imported names: of an extension module (``from . import _C``, ``import x_cuda``), and of a
    # function of one (``from x_cuda import forward``).
    imported_extensions: frozenset[str] = frozenset()
    extension_functions: frozenset[str] = frozenset()
    from_imports: frozenset[str] = frozenset()  # names bound by `from m import name`
    # Module-level functions decorated with triton.* -> (their parameters, those the kernel
    # reads only as ``tl.load(p)``: one element, the first, wherever the tensor's strides put
    # the others).
    triton_kernels: dict[str, tuple[tuple[str, ...], frozenset[str]]] = field(default_factory=dict)
    imports_triton: bool = False
    op_namespaces: frozenset[str] = frozenset()  # torch.library namespaces the file defines


def is_extension_module(qualified: str) -> bool:
    """``._C``, ``fused_layer_norm_cuda``, ``mmcv._ext``: an imported module named like a compiled
    extension, outside the libraries that read strides themselves."""
    parts = qualified.lstrip(".").split(".")
    return bool(parts[0]) and parts[0] not in _LAYOUT_AWARE_TOPS and bool(_EXTENSION_MODULE.match(parts[-1]))


# A call that loads an extension (``cpp_extension.load(...)``, ``load_inline``, a builder's
# ``.load()``, mmcv's ``load_ext``, ``import_module``) or defines ops (``torch.library``): a
# file without one skips the walk over every node (the substring "load" alone is in most files).
_MAY_LOAD_OR_DEFINE = re.compile(r"cpp_extension|load_inline|load_ext|import_module|\.load\(\s*\)|"
                                 r"torch\.library|Library\(")


def module_kernels(tree: Optional[ast.Module], imports: Optional["ImportMap"], text: str = "") -> ModuleKernels:
    """``text``, when given, lets a file without a loader call or ``torch.library`` skip the walk
    over every node that finds them."""
    if tree is None or imports is None:
        return ModuleKernels()
    loaded: set[str] = set()
    namespaces: set[str] = set()
    walked = walk(tree) if not text or _MAY_LOAD_OR_DEFINE.search(text) else ()
    for node in walked:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _loads_extension(node.value, imports):
            loaded.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Call):
            name = dotted_name(node.func)
            if name and imports.qualify(name).startswith("torch.library.") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    namespaces.add(first.value.partition("::")[0])
    triton = {
        statement.name: _kernel_parameters(statement) for statement in tree.body
        if isinstance(statement, ast.FunctionDef)
        and any(_qualified(d.func if isinstance(d, ast.Call) else d, imports).startswith("triton.")
                for d in statement.decorator_list)
    }
    imports_triton = any(target.lstrip(".").split(".")[0] == "triton" for target in imports.names.values())
    extensions = frozenset(local for local, target in imports.names.items() if is_extension_module(target))
    functions = frozenset(local for local, target in imports.names.items()
                          if "." in target.lstrip(".") and is_extension_module(target.rpartition(".")[0]))
    from_imports = frozenset(local for local, target in imports.names.items() if target != local)
    return ModuleKernels(frozenset(loaded), extensions, functions - extensions, from_imports, triton,
                         imports_triton, frozenset(namespaces))


def _kernel_parameters(kernel: ast.FunctionDef) -> tuple[tuple[str, ...], frozenset[str]]:
    """A Triton kernel's parameters, and those it only ever reads as ``tl.load(p)`` (no offset:
    the element at the pointer, whatever the layout)."""
    params = tuple(a.arg for a in kernel.args.posonlyargs + kernel.args.args)
    uses: dict[str, list[bool]] = {}  # parameter -> for each read, is it a plain `tl.load(p)`
    plain_loads = set()
    for node in walk(kernel):
        if isinstance(node, ast.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] == "load" and node.args:
            if isinstance(node.args[0], ast.Name):
                plain_loads.add(id(node.args[0]))
    for node in walk(kernel):
        if isinstance(node, ast.Name) and node.id in params:
            uses.setdefault(node.id, []).append(id(node) in plain_loads)
    return params, frozenset(name for name, reads in uses.items() if reads and all(reads))


def _qualified(node: ast.AST, imports: "ImportMap") -> str:
    name = dotted_name(node)
    return imports.qualify(name) if name else ""


def _loads_extension(call: ast.Call, imports: "ImportMap") -> bool:
    """``torch.utils.cpp_extension.load(...)``, ``SomeBuilder().load()``, or a loader given an
    extension's module name (``load_ext('_ext', [...])``, ``import_module('x_cuda')``)."""
    if _qualified(call.func, imports) in _EXTENSION_LOADERS:
        return True
    func = call.func
    if (isinstance(func, ast.Attribute) and func.attr == "load" and isinstance(func.value, ast.Call)
            and (dotted_name(func.value.func) or "").rsplit(".", 1)[-1].endswith("Builder")):
        return True
    first = call.args[0] if call.args else None
    return (isinstance(first, ast.Constant) and isinstance(first.value, str)
            and bool(_EXTENSION_MODULE.match(first.value.rsplit(".", 1)[-1])))


@dataclass(frozen=True)
class KernelCall:
    kind: str  # TRITON, EXTENSION, CUSTOM_OP or POINTER
    call: cst.Call
    shown: str  # how a message names it: "_bwd_kernel[grid]", "ext_module.roi_align_backward"
    # What the call hands the kernel: its arguments (the elements of a tuple/list argument too);
    # for POINTER, the tensor whose address is taken. A Triton kernel of this file is not handed
    # the arguments it reads only at their first element.
    arguments: tuple[cst.BaseExpression, ...]
    # This file shows what the kernel does with its arguments (a Triton kernel defined here).
    body_seen: bool = False


def kernel_calls(method: "Method", qualify: Callable[[str], str], kernels: ModuleKernels) -> list[KernelCall]:
    """The custom kernels ``method`` calls (its own body, not nested functions), in source order."""
    found = []
    for call in method.nodes_of(cst.Call):
        func = call.func
        if isinstance(func, cst.Subscript):
            name = dotted(func.value)
            if name is not None and name in kernels.triton_kernels:
                params, one_element = kernels.triton_kernels[name]
                found.append(KernelCall(TRITON, call, f"{name}[...]", _handed(call, params, one_element), True))
            elif name is not None and kernels.imports_triton and name in kernels.from_imports:
                found.append(KernelCall(TRITON, call, f"{name}[...]", _handed(call)))
            continue
        if isinstance(func, cst.Attribute) and func.attr.value == "data_ptr" and not call.args:
            arg = method.parents.get(id(call))
            reader = method.parents.get(id(arg)) if isinstance(arg, cst.Arg) else None
            if isinstance(reader, cst.Call) and dotted(reader.func) not in _NOT_READERS:
                shown = (dotted(func.value) or "tensor") + ".data_ptr()"
                found.append(KernelCall(POINTER, call, shown, (func.value,)))
            continue
        name = dotted(func)
        if name is None:
            continue
        parts = qualify(name).split(".")
        head = name.partition(".")[0]
        if parts[:2] == ["torch", "ops"] and len(parts) >= 4:
            if parts[2] not in TORCH_OP_NAMESPACES and parts[2] not in kernels.op_namespaces:
                found.append(KernelCall(CUSTOM_OP, call, name, _handed(call)))
        elif ("." in name and head in kernels.loaded_extensions | kernels.imported_extensions) or (
                name in kernels.extension_functions):
            found.append(KernelCall(EXTENSION, call, name, _handed(call)))
    return found


def _handed(call: cst.Call, params: tuple[str, ...] = (),
            one_element: frozenset[str] = frozenset()) -> tuple[cst.BaseExpression, ...]:
    """The values ``call`` hands over, less those bound to a parameter in ``one_element``."""
    values = []
    starred = False  # after `*args`, positions no longer name parameters
    for position, arg in enumerate(call.args):
        starred = starred or arg.star != ""
        param = arg.keyword.value if arg.keyword is not None else (
            params[position] if not starred and position < len(params) else None)
        if param in one_element:
            continue
        value = arg.value
        if isinstance(value, (cst.Tuple, cst.List)):
            values.extend(e.value for e in value.elements)
        else:
            values.append(value)
    return tuple(values)


# --- which names keep a tensor's layout ---------------------------------------------------

# Methods that return the tensor itself, a view of it, or a copy with its strides
# (``.float()``, ``.to()``, ``.clone()`` keep a dense tensor's layout: memory_format=preserve).
_LAYOUT_KEEPING_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "t", "transpose", "permute", "unsqueeze", "squeeze",
    "expand", "expand_as", "broadcast_to", "narrow", "select", "flatten", "unflatten", "detach",
    "diagonal", "movedim", "moveaxis", "swapaxes", "swapdims", "unfold", "as_strided", "view_as_real",
    "view_as_complex", "requires_grad_", "detach_", "squeeze_", "unsqueeze_", "t_", "transpose_",
    "float", "half", "double", "bfloat16", "to", "type", "type_as", "clone", "cuda",
    "chunk", "split", "unbind", "tensor_split", "split_with_sizes",
})
_LAYOUT_KEEPING_FUNCTIONS = frozenset({
    "torch.t", "torch.transpose", "torch.permute", "torch.unsqueeze", "torch.squeeze", "torch.narrow",
    "torch.select", "torch.flatten", "torch.reshape", "torch.movedim", "torch.moveaxis", "torch.swapaxes",
    "torch.swapdims", "torch.diagonal", "torch.as_strided", "torch.broadcast_to", "torch.view_as_real",
    "torch.chunk", "torch.split", "torch.unbind", "torch.tensor_split", "torch.detach",
})
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
_SPLITTERS = frozenset({"chunk", "split", "unbind", "tensor_split", "split_with_sizes"})
_SHAPE_TESTS = frozenset({"ndim", "dim", "is_contiguous"})


@dataclass
class LayoutFlow:
    """Within one method: the local names that hold one of ``sources`` (or a view, cast or split
    of it) with its layout, by source. A name rebound to anything else (``g = g.contiguous()``,
    ``g = g * 2``) anywhere in the method is not followed at all: what it holds at the kernel
    call is then not known to be the source's layout."""

    method: "Method"
    qualify: Callable[[str], str]
    sources: dict[str, str]  # parameter -> the source it holds (a gradient's name)
    names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The largest consistent answer: start from every parameter (``g = g.view(-1, n)`` needs
        # ``g`` followed to follow itself), then drop names with a binding that is not a source.
        bindings = _bindings(self.method)
        self.names = dict(self.sources)
        for _ in range(len(bindings) + 2):
            changed = False
            for name, values in bindings.items():
                roots = {self._root(value) for value in values}
                if name in self.sources:
                    roots.add(self.sources[name])  # the parameter's own value is one binding
                root = roots.pop() if len(roots) == 1 else None
                if root is not None and self.names.get(name) != root:
                    self.names[name] = root
                    changed = True
                elif root is None and name in self.names:
                    del self.names[name]
                    changed = True
            if not changed:
                break

    def _root(self, value) -> Optional[str]:
        if value is None:
            return None
        if isinstance(value, _Unpacked):
            return self.root(value.value)
        return self.root(value)

    def root(self, node: cst.BaseExpression) -> Optional[str]:
        """The source ``node`` holds with its layout (itself, a view, a cast, an element of a
        split), or None."""
        if isinstance(node, cst.Name):
            return self.names.get(node.value)
        if isinstance(node, cst.Attribute) and node.attr.value in _VIEW_ATTRIBUTES:
            return self.root(node.value)
        if isinstance(node, cst.Subscript):
            return self.root(node.value) if is_basic_index(node) else None
        if isinstance(node, cst.IfExp):
            body, orelse = self.root(node.body), self.root(node.orelse)
            return body if body == orelse else None
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _LAYOUT_KEEPING_METHODS:
                if _makes_contiguous(node):
                    return None
                return self.root(func.value)
            name = dotted(func)
            args = positional_args(node)
            if name is not None and args and self.qualify(name) in _LAYOUT_KEEPING_FUNCTIONS:
                return self.root(args[0].value)
        return None

    def shape_tested(self) -> set[str]:
        """Sources whose layout or rank the method tests: ``g.is_contiguous()`` anywhere, or
        ``g.ndim``/``g.dim()`` in a condition (a 0-d gradient is contiguous). The author
        thought about what arrives; the rules do not second-guess it."""
        tested = set()
        for node in self.method.nodes_of(cst.Attribute):
            if node.attr.value in _SHAPE_TESTS:
                root = self.root(node.value)
                if root is not None:
                    tested.add(root)
        return tested

    def stride_passed(self, call: cst.Call, source: str) -> bool:
        """Does ``call`` get one of ``source``'s strides (``g.stride(0)``, ``*g.stride()``, or a
        name bound to an expression reading them)?"""
        strided_names = {
            name for name, values in _bindings(self.method).items()
            if any(v is not None and not isinstance(v, _Unpacked) and self._reads_stride(v, source) for v in values)
        }
        for arg in call.args:
            if self._reads_stride(arg.value, source):
                return True
            if any(isinstance(n, cst.Name) and n.value in strided_names for n in _nodes(arg.value)):
                return True
        return False

    def _reads_stride(self, node: cst.CSTNode, source: str) -> bool:
        for sub in _nodes(node):
            if (isinstance(sub, cst.Call) and isinstance(sub.func, cst.Attribute)
                    and sub.func.attr.value == "stride" and self.root(sub.func.value) == source):
                return True
        return False


@dataclass(frozen=True)
class _Unpacked:
    """The value of one name of ``a, b = x.chunk(2)``: a part of ``x``, with its layout."""

    value: cst.BaseExpression


def _makes_contiguous(call: cst.Call) -> bool:
    """``x.clone(memory_format=torch.contiguous_format)`` / ``x.to(..., memory_format=...)``."""
    form = call_keyword(call, "memory_format")
    return form is not None and (dotted(form) or "").endswith("contiguous_format")


def _bindings(method: "Method") -> dict[str, list]:
    """Every value bound to each local name of ``method``: an expression, an ``_Unpacked`` for a
    name of a tuple target, or None for a binding that cannot be read (a loop, ``with``)."""
    result: dict[str, list] = {}

    def bind(target: cst.CSTNode, value) -> None:
        if isinstance(target, cst.Name):
            result.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements) and not any(
                    isinstance(e, cst.StarredElement) for e in value.elements):
                for element, item in zip(elements, value.elements):
                    bind(element.value, item.value)
                return
            splits = (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                      and value.func.attr.value in _SPLITTERS)
            for element in elements:
                inner = element.value
                bind(inner, _Unpacked(value.func.value) if splits and isinstance(inner, cst.Name) else None)
        elif isinstance(target, cst.StarredElement):
            bind(target.value, None)

    for target, value in method.binding_sites:  # the statements that bind, shared with class_model
        bind(target, value)
    return result


def _nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    return list(all_nodes(node))


# --- tensors handed to kernels, through helpers ----------------------------------------------

@dataclass(frozen=True)
class Handoff:
    """A source (a gradient, an input) handed with its layout to a kernel."""

    source: str
    kernel: KernelCall
    handed: cst.BaseExpression  # the argument that holds it
    strides_passed: bool  # the kernel also gets the source's strides
    method: "Method"  # where the kernel call is: the analysed method or a helper it calls
    # When a helper makes the kernel call: the call, in the analysed method, that leads there.
    via: Optional[cst.Call] = None


_HELPER_DEPTH = 2


def handoffs(model: "FunctionModel", method: "Method", sources: dict[str, str], depth: int = 0) -> list[Handoff]:
    """Every kernel call of ``method`` (and of the helpers it calls with a source, two levels
    deep: ``model.helper``) that gets one of ``sources`` with its layout; a source whose layout
    or rank the method tests is left out. ``sources``: parameter name -> the source it holds."""
    flow = LayoutFlow(method, model.qualify, sources)
    tested = flow.shape_tested()
    found: list[Handoff] = []
    for kernel in kernel_calls(method, model.qualify, model.kernels or ModuleKernels()):
        for value in kernel.arguments:
            source = flow.root(value)
            if source is not None and source not in tested:
                found.append(Handoff(source, kernel, value, flow.stride_passed(kernel.call, source), method))
                break
    if depth >= _HELPER_DEPTH:
        return found

    def followed(value: cst.BaseExpression) -> bool:
        source = flow.root(value)
        return source is not None and source not in tested

    for call in method.nodes_of(cst.Call):
        helper = model.helper(call, passing=followed)
        if helper is None or helper.node is method.node:
            continue
        bound = bind_arguments(helper, call) or {}
        passed = {param: flow.root(value) for param, value in bound.items()}
        passed = {param: source for param, source in passed.items() if source is not None and source not in tested}
        if passed:
            found.extend(replace(inner, via=call) for inner in handoffs(model, helper, passed, depth + 1))
    return found
