"""The shared model of one Function class: every rule reads this and nothing else of the class.

Built once per class from its libcst tree: the methods and their parameters, forward's inputs
and outputs, backward's gradient parameters and return paths, what forward/setup_context store
on ``ctx`` (attributes and ``save_for_backward``), what backward reads back, and a tensor-ness
judge for each method. Anything that cannot be read statically is ``None`` ("unknown"): rules
that need it stay silent.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Optional, Union

import libcst as cst

from autograd_lint.analysis.module_index import ClassInfo
from autograd_lint.analysis.project import ClassSource, ProjectFacts
from autograd_lint.analysis.snippet import ParsedClass, RemoteClass, Span
from autograd_lint.analysis.syntax import (
    code_children,
    constant_index,
    dotted,
    has_star_arg,
    is_ctx_attr,
    is_none,
    literal_key,
    own_nodes,
    parse_module,
    positional_args,
    target_names,
)
from autograd_lint.analysis.input_evidence import (
    USE_NODE_CLASSES,
    ParameterUses,
    annotation_text,
    collect_uses,
    judge_parameter,
)
from autograd_lint.analysis.tensorness import Tensorness, TensorJudge

if TYPE_CHECKING:
    from autograd_lint.analysis.certainty import Certainty
    from autograd_lint.analysis.kernels import ModuleKernels
    from autograd_lint.analysis.provenance import ProvenanceModel

METHOD_NAMES = ("forward", "backward", "setup_context", "jvp", "vjp")
SAVED_TENSORS = ("saved_tensors", "saved_variables")


@dataclass
class Param:
    name: str
    node: cst.Param
    default: Optional[cst.BaseExpression]
    annotation: Optional[str]

    @property
    def has_default(self) -> bool:
        return self.default is not None


@dataclass
class Method:
    name: str
    node: cst.FunctionDef
    decorators: list[str]  # last component of each decorator: 'staticmethod', 'once_differentiable'
    params: list[Param]  # positional parameters (``cls`` of a classmethod removed)
    star_args: Optional[str]  # name of ``*args`` if any
    owner: str  # the class that defines it
    parsed: ParsedClass  # where its positions come from
    inherited: bool = False
    # each decorator as written, outermost first (``torch.amp.custom_fwd``, ``input_guard``);
    # what they do is ``certainty``'s question
    decorator_names: tuple[str, ...] = ()

    @property
    def is_static(self) -> bool:
        return "staticmethod" in self.decorators

    @property
    def is_classmethod(self) -> bool:
        return "classmethod" in self.decorators

    @cached_property
    def _derived(self) -> dict:
        """What depends on this method's syntax tree alone, kept with the tree (``ParsedClass.derived``)."""
        return self.parsed.derived(self.node)

    @cached_property
    def nodes(self) -> list[cst.CSTNode]:
        """Every node of the body in source order, nested functions and lambdas excluded."""
        found = self._derived.get("nodes")
        if found is None:
            found = self._derived["nodes"] = own_nodes(self.node)
        return found

    @cached_property
    def binding_sites(self) -> list[tuple[cst.CSTNode, Optional[cst.BaseExpression]]]:
        """Each (target, value) a statement of the body binds, in source order: an assignment's
        target and value; None as the value where it cannot be read (a loop variable, a
        ``with ... as``, an ``except ... as``, an import). The targets are as written (a Name,
        a Tuple, an Attribute...): each reader unpacks them its own way."""
        sites: list[tuple[cst.CSTNode, Optional[cst.BaseExpression]]] = []
        for node in self.nodes_of(cst.Assign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.WithItem,
                                  cst.ExceptHandler, cst.Import, cst.ImportFrom):
            if isinstance(node, cst.Assign):
                sites.extend((target.target, node.value) for target in node.targets)
            elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)):
                if node.value is not None:
                    sites.append((node.target, node.value))
            elif isinstance(node, (cst.For, cst.CompFor)):
                sites.append((node.target, None))
            elif isinstance(node, cst.WithItem):
                if node.asname is not None:
                    sites.append((node.asname.name, None))
            elif isinstance(node, cst.ExceptHandler):
                if node.name is not None:
                    sites.append((node.name.name, None))
            elif not isinstance(node.names, cst.ImportStar):
                sites.extend((alias.asname.name if alias.asname else alias.name, None) for alias in node.names
                             if isinstance(alias.asname.name if alias.asname else alias.name, cst.Name))
        return sites

    def nodes_of(self, *types: type) -> list[cst.CSTNode]:
        """The nodes of ``nodes`` that are instances of ``types``, in source order.

        Every rule and model property looks for a few kinds of node; libcst's node classes check
        ``isinstance`` through ABCMeta (slow), so sorting the nodes by class once and asking per
        class is several times faster than testing every node against a chain of classes."""
        found = self._nodes_of_cache.get(types)
        if found is None:
            buckets = [bucket for kind, bucket in self._nodes_by_class.items() if _is_subclass(kind, types)]
            if len(buckets) == 1:
                found = [node for _, node in buckets[0]]
            else:
                found = [node for _, node in sorted((pair for b in buckets for pair in b), key=_position)]
            self._nodes_of_cache[types] = found
        return found

    @cached_property
    def _nodes_by_class(self) -> dict[type, list[tuple[int, cst.CSTNode]]]:
        buckets = self._derived.get("by_class")
        if buckets is None:
            buckets = self._derived["by_class"] = {}
            for position, node in enumerate(self.nodes):
                buckets.setdefault(type(node), []).append((position, node))
        return buckets

    @cached_property
    def _nodes_of_cache(self) -> dict[tuple[type, ...], list[cst.CSTNode]]:
        return self._derived.setdefault("of", {})

    @cached_property
    def parents(self) -> dict[int, cst.CSTNode]:
        """id(node) -> its parent, over the method's own nodes (nested functions, lambdas and
        classes left out, as in ``nodes``)."""
        found = self._derived.get("parents")
        if found is not None:
            return found
        found = self._derived["parents"] = {}
        for node in [self.node.body, *self.nodes]:
            if type(node) in (cst.FunctionDef, cst.Lambda, cst.ClassDef) and node is not self.node:
                continue
            for child in code_children(node):
                found[id(child)] = node
        return found

    @cached_property
    def ctx_name_set(self) -> frozenset[str]:
        """``{ctx_name}`` (empty without parameters): asked for most nodes of a method."""
        return frozenset([self.ctx_name]) if self.ctx_name else frozenset()

    @property
    def ctx_name(self) -> Optional[str]:
        return self.params[0].name if self.params else None

    @cached_property
    def returns(self) -> list[cst.Return]:
        return self.nodes_of(cst.Return)

    @cached_property
    def statements(self) -> list[cst.CSTNode]:
        """Small statements (assignments, expressions, returns) in source order."""
        return self.nodes_of(cst.BaseSmallStatement)

    def span(self, node: cst.CSTNode) -> Span:
        return self.parsed.span(node)


_SUBCLASS: dict[tuple[type, tuple[type, ...]], bool] = {}


def _is_subclass(kind: type, types: tuple[type, ...]) -> bool:
    """``issubclass``, remembered: through libcst's ABCMeta it costs a Python call each time."""
    known = _SUBCLASS.get((kind, types))
    if known is None:
        known = _SUBCLASS[(kind, types)] = issubclass(kind, types)
    return known


def _position(pair: tuple[int, cst.CSTNode]) -> int:
    return pair[0]


@dataclass
class CtxAttributeSet:
    attr: str
    value: Optional[cst.BaseExpression]  # None when not readable (setattr with a variable, AugAssign)
    statement: cst.CSTNode
    method: Method
    # Set for one element of a container stored on ctx (``ctx.tensors = (None, B)`` gives the
    # whole tuple, then ``B`` at index 1): its position (negative after a starred element, counted
    # from the end) or its dict key. Each element is a value ctx holds, as ``ctx.x = x`` is.
    index: Union[int, str, None] = None

    @property
    def shown(self) -> str:
        """How the value is written when read back: ``ctx.x``, ``ctx.tensors[1]``, ``ctx.d["a"]``."""
        if self.index is None:
            return f"ctx.{self.attr}"
        return f"ctx.{self.attr}[{self.index!r}]" if isinstance(self.index, str) else f"ctx.{self.attr}[{self.index}]"


@dataclass
class SaveCall:
    call: cst.Call
    method: Method
    args: Optional[list[cst.BaseExpression]]  # None when starred (count unknown)


Assignment = Union[cst.BaseExpression, Tensorness, None]


@dataclass
class FunctionModel:
    name: str
    info: ClassInfo
    parsed: ParsedClass
    methods: dict[str, Method]  # own and inherited from Function bases in the same file
    style: str  # "legacy" (forward(ctx, ...)) or "new" (forward(...) + setup_context)
    qualify: Callable[[str], str]
    bases: list["FunctionModel"] = field(default_factory=list)  # Function bases in this file
    # Set when a base is a Function class in another file: what it provides comes from the
    # project facts (``inherited_from_project``), and is unknown if they do not know it.
    unknown_base: bool = False
    inherited_from_project: Optional[tuple[set[str], set[str]]] = None
    remote_bases: list[str] = field(default_factory=list)  # Function bases in other files
    # The file's module-level function of a name, parsed, or None (``SourceFile.module_function``).
    module_function: Callable[[str], Optional["Method"]] = field(default=lambda name: None, repr=False)
    key: str = ""  # ``module.Class`` (analysis.names)
    project: Optional[ProjectFacts] = None
    # What the file says about custom kernels (``analysis.kernels``), computed when a rule first
    # asks (it walks the whole module): set with module_function.
    kernels_of: Callable[[], Optional["ModuleKernels"]] = field(default=lambda: None, repr=False)

    @property
    def kernels(self) -> Optional["ModuleKernels"]:
        return self.kernels_of()

    def passed_literals(self, input_name: str) -> Optional[frozenset[str]]:
        """The kinds of literal every ``.apply(...)`` call in the linted files passes for this
        forward input (``ProjectFacts.literal_kinds``), or None."""
        names = [p.name for p in self.known_inputs]
        if self.project is None or input_name not in names:
            return None
        return self.project.literal_kinds(self.key, names.index(input_name))

    def callers_rebind(self, input_name: str) -> bool:
        """Every ``.apply(...)`` call in the linted files rebinds the name it passes for this
        input to the result (``k = F.apply(k, v)``, ``ProjectFacts.rebound_at_every_call``)."""
        names = [p.name for p in self.known_inputs]
        if self.project is None or input_name not in names:
            return False
        return self.project.rebound_at_every_call(self.key, names.index(input_name))

    def rebound_in_place(self, input_name: str) -> bool:
        """forward returns this input as it came (not a view of it) and every caller rebinds its
        name to the result: an in-place op by contract, whose callers keep no stale tensor
        (unsloth's slow RoPE, torchdiffeq's ``_UncheckedAssign``)."""
        names = [p.name for p in self.known_inputs]
        if input_name not in names:
            return False
        position = names.index(input_name)
        return (any(r.position == position and not r.view for r in self.provenance.returned_inputs())
                and self.callers_rebind(input_name))

    # ---- methods ---------------------------------------------------------------------------
    def method(self, name: str) -> Optional[Method]:
        return self.methods.get(name)

    def own(self, name: str) -> Optional[Method]:
        """The method only if this class itself defines it (rules report on own code only)."""
        method = self.methods.get(name)
        return method if method is not None and not method.inherited else None

    @property
    def forward(self) -> Optional[Method]:
        return self.methods.get("forward")

    @property
    def backward(self) -> Optional[Method]:
        return self.methods.get("backward")

    @property
    def setup_context(self) -> Optional[Method]:
        return self.methods.get("setup_context")

    @property
    def forward_methods(self) -> list[Method]:
        """forward and setup_context: where ctx is filled."""
        return [m for m in (self.forward, self.setup_context) if m is not None]

    def ctx_names(self, method: Method) -> frozenset[str]:
        """The names that refer to ctx inside ``method`` (none in a new-style forward)."""
        if method.name == "forward" and self.style == "new":
            return frozenset()
        return method.ctx_name_set

    # ---- helpers ---------------------------------------------------------------------------
    @cached_property
    def class_helpers(self) -> dict[str, Method]:
        """The class's own @staticmethod/@classmethod functions other than the autograd methods."""
        result = {}
        for statement in self.parsed.node.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value not in METHOD_NAMES:
                method = _method(statement, self.name, self.parsed)
                if method.is_static or method.is_classmethod:
                    result[method.name] = method
        return result

    @cached_property
    def generate_vmap_rule_true(self) -> Optional[cst.CSTNode]:
        """The class body's own ``generate_vmap_rule = True`` (an assignment of the literal), or None."""
        for statement in self.parsed.node.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign):
                    targets = [small.target]
                else:
                    continue
                if isinstance(small.value, cst.Name) and small.value.value == "True" and any(
                        isinstance(t, cst.Name) and t.value == "generate_vmap_rule" for t in targets):
                    return small
        return None

    def helper(self, call: cst.Call, passing: Optional[Callable[[cst.BaseExpression], bool]] = None
               ) -> Optional[Method]:
        """The helper a call in forward/backward runs, when this file shows its body: a static or
        class method of this class (``MyFn._step(x)``, ``cls._step(x)``) or a module-level
        function of the file (``_step(x)``, not imported). ``passing``: what a rule follows into
        helpers (a tracked tensor, a tensor): None unless the call passes such an argument, so
        that a module-level helper given none of them is not parsed (``bind_arguments`` binds
        only the call's own arguments, so nothing the rule follows could reach it)."""
        if passing is not None and not any(passing(arg.value) for arg in call.args):
            return None
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in (
                self.name, "cls"):
            return self.class_helpers.get(func.attr.value)
        if isinstance(func, cst.Name) and self.qualify(func.value) == func.value:
            return self.module_function(func.value)
        return None

    # ---- forward inputs and outputs ---------------------------------------------------------
    @cached_property
    def inputs(self) -> Optional[list[Param]]:
        """forward's inputs (what ``.apply`` passes); None when unknown (no forward, or ``*args``
        not unpacked into an exact number of names)."""
        forward = self.forward
        if forward is None:
            return None
        if forward.star_args is not None:
            unpacked = self.star_inputs
            return unpacked[0] if unpacked is not None and unpacked[1] else None
        return self._named_inputs

    @cached_property
    def known_inputs(self) -> list[Param]:
        """The inputs known by position: ``inputs``, or when their count is unknowable, those
        forward names from ``*args`` (``x, w, *rest = args``, ``x = args[0]``). For what an input
        is and how it is used, never for counting."""
        if self.inputs is not None:
            return self.inputs
        unpacked = self.star_inputs
        return unpacked[0] if unpacked is not None else []

    @property
    def _named_inputs(self) -> Optional[list[Param]]:
        forward = self.forward
        if self.style == "legacy":
            return forward.params[1:]
        if forward.params and forward.params[0].name == "ctx":
            return None  # new style with a forward that still takes ctx (AGL106): inputs unclear
        return forward.params

    @cached_property
    def star_inputs(self) -> Optional[tuple[list[Param], bool]]:
        """``def forward(ctx, *args): a, b = args``: the inputs by position (named parameters, then
        the names unpacked from ``*args`` by a statement of forward's own body, or ``a = args[0]``),
        and whether that is all of them (an exact unpacking raises for any other count)."""
        forward = self.forward
        named = self._named_inputs if forward is not None else None
        if forward is None or forward.star_args is None or named is None:
            return None
        star = forward.star_args
        by_position: dict[int, str] = {}
        complete = False
        for line in forward.node.body.body if isinstance(forward.node.body, cst.IndentedBlock) else []:
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
                    continue
                target, value = small.targets[0].target, small.value
                if isinstance(value, cst.Name) and value.value == star and isinstance(target, (cst.Tuple, cst.List)):
                    for i, element in enumerate(target.elements):
                        if isinstance(element, cst.StarredElement):
                            break
                        if isinstance(element.value, cst.Name):
                            by_position.setdefault(i, element.value.value)
                    else:
                        complete = not by_position or max(by_position) == len(target.elements) - 1
                elif isinstance(target, cst.Name) and isinstance(value, cst.Subscript):
                    position = subscript_position(value, star)
                    if position is not None:
                        by_position.setdefault(position, target.value)
        if not by_position or any(i not in by_position for i in range(max(by_position) + 1)):
            return None  # a gap: the positions after it are not known
        params = list(named) + [Param(by_position[i], cst.Param(cst.Name(by_position[i])), None, None)
                                for i in range(len(by_position))]
        return params, complete

    @cached_property
    def input_tensorness(self) -> dict[str, Tensorness]:
        """Each forward input's tensor-ness (see input_evidence for the evidence it weighs)."""
        inputs = self.known_inputs
        uses = self.input_uses
        return {
            p.name: judge_parameter(p.name, p.annotation, p.default, uses[p.name], is_first=(i == 0),
                                    passed=self.passed_literals(p.name))
            for i, p in enumerate(inputs)
        }

    @cached_property
    def certain_input_tensorness(self) -> dict[str, Tensorness]:
        """``input_tensorness`` without the guesses from a name or from being forward's first
        input: what the annotation, the default, the callers and the uses prove."""
        inputs = self.known_inputs
        uses = self.input_uses
        return {
            p.name: judge_parameter(p.name, p.annotation, p.default, uses[p.name], is_first=(i == 0),
                                    by_name=False, passed=self.passed_literals(p.name))
            for i, p in enumerate(inputs)
        }

    @cached_property
    def input_uses(self) -> dict[str, ParameterUses]:
        """How forward, setup_context and the backward-side methods use each input: directly, or
        through the ctx attribute it was stored in (``ctx.fn = fn`` then ``ctx.fn(...)``)."""
        inputs = self.known_inputs
        uses = {p.name: ParameterUses() for p in inputs}
        if self.forward is None:
            return uses
        stored_in = {  # ctx attribute -> the input assigned to it as is
            s.attr: s.value.value for s in self.ctx_attribute_sets
            if isinstance(s.value, cst.Name) and s.value.value in uses and s.method.name == "forward"
        }
        for name, method in self.methods.items():
            ctx_names = self.ctx_names(method)
            if name == "forward":
                local_inputs = uses
            elif name == "setup_context":
                local_inputs = {local: uses[param] for local, param in self.setup_context_inputs.items()}
            else:
                local_inputs = self._unpacked_stored_inputs(method, ctx_names, uses)

            def target(node: cst.CSTNode, local_inputs=local_inputs, ctx_names=ctx_names):
                if isinstance(node, cst.Name):
                    return local_inputs.get(node.value)
                if is_ctx_attr(node, ctx_names) and node.attr.value in stored_in:
                    return uses[stored_in[node.attr.value]]
                return None

            collect_uses(method.nodes_of(*USE_NODE_CLASSES), target, self.qualify)
        self._gradient_evidence(inputs, uses)
        return uses

    def _unpacked_stored_inputs(self, method: Method, ctx_names: frozenset[str],
                                uses: dict[str, ParameterUses]) -> dict[str, ParameterUses]:
        """Names that backward (or another method after forward) binds to an input forward stored
        in a ctx container: ``gidx, op = ctx.backward_cache`` after ``ctx.backward_cache = (gidx,
        op)``, or ``w = ctx.tensors[1]``. How backward uses them tells what the input is
        (``gidx.reverse()``: not a tensor)."""
        stored: dict[str, dict[int, str]] = {}  # attribute -> position -> input name
        for attr_set in self.ctx_attribute_sets:
            if (attr_set.index is not None and isinstance(attr_set.index, int) and attr_set.method.name == "forward"
                    and isinstance(attr_set.value, cst.Name) and attr_set.value.value in uses):
                stored.setdefault(attr_set.attr, {})[attr_set.index] = attr_set.value.value
        if not stored:
            return {}
        result: dict[str, ParameterUses] = {}
        for node in method.nodes_of(cst.Assign):
            if len(node.targets) != 1 or not is_ctx_attr(node.value, ctx_names) and not (
                    isinstance(node.value, cst.Subscript) and is_ctx_attr(node.value.value, ctx_names)):
                continue
            target = node.targets[0].target
            if isinstance(node.value, cst.Subscript):
                positions = stored.get(node.value.value.attr.value, {})
                index = constant_index(node.value)
                if isinstance(target, cst.Name) and index in positions:
                    result[target.value] = uses[positions[index]]
                continue
            positions = stored.get(node.value.attr.value, {})
            if isinstance(target, (cst.Tuple, cst.List)) and not any(
                    isinstance(e, cst.StarredElement) for e in target.elements):
                for i, element in enumerate(target.elements):
                    if i in positions and isinstance(element.value, cst.Name):
                        result[element.value.value] = uses[positions[i]]
        return result

    def _gradient_evidence(self, inputs: list[Param], uses: dict[str, ParameterUses]) -> None:
        """backward returning a gradient (not None) for input i proves input i is a tensor:
        PyTorch raises for a gradient of a non-tensor input (docs/runtime-mechanisms.md, F12)."""
        backward = self.backward
        if backward is None:
            return
        only_none = _names_only_bound_to_none(backward)  # `dsx = None ... return dx, dsx`
        for ret in backward.returns:
            if not isinstance(ret.value, cst.Tuple) or len(ret.value.elements) < len(inputs):
                continue
            for param, element in zip(inputs, ret.value.elements):
                if isinstance(element, cst.StarredElement) or is_none(element.value):
                    continue
                if isinstance(element.value, cst.Name) and element.value.value in only_none:
                    continue
                uses[param.name].as_tensor = True

    @cached_property
    def setup_context_inputs(self) -> dict[str, str]:
        """Names setup_context unpacks from ``inputs`` -> the forward input at that position
        (``x, w = inputs`` or ``w = inputs[1]``)."""
        setup, inputs = self.setup_context, self.inputs or []
        if setup is None or len(setup.params) < 2:
            return {}
        inputs_name = setup.params[1].name
        result: dict[str, str] = {}
        for node in setup.nodes:
            if not isinstance(node, cst.Assign) or len(node.targets) != 1:
                continue
            target, value = node.targets[0].target, node.value
            if isinstance(value, cst.Name) and value.value == inputs_name and isinstance(target, (cst.Tuple, cst.List)):
                for element, param in zip(target.elements, inputs):
                    if isinstance(element.value, cst.Name):
                        result[element.value.value] = param.name
            elif isinstance(target, cst.Name) and isinstance(value, cst.Subscript):
                position = _constant_index(value, setup)
                if position is not None and position < len(inputs):
                    result[target.value] = inputs[position].name
        return result

    @cached_property
    def output_count(self) -> Optional[int]:
        """How many values forward returns on every path; None if unknown or paths disagree."""
        forward = self.forward
        if forward is None or not forward.returns:
            return None
        judge = self.judge(forward)
        counts = set()
        for ret in forward.returns:
            value = ret.value
            if isinstance(value, cst.Tuple):
                if any(isinstance(e, cst.StarredElement) for e in value.elements):
                    return None
                counts.add(len(value.elements))
            elif value is not None and judge(value) is Tensorness.TENSOR:
                counts.add(1)
            else:
                return None
        return counts.pop() if len(counts) == 1 else None

    @cached_property
    def returned_names(self) -> Optional[set[str]]:
        """Names forward returns (elements of its return tuples); None if anything else is returned."""
        forward = self.forward
        if forward is None or not forward.returns:
            return None
        names: set[str] = set()
        for ret in forward.returns:
            value = ret.value
            elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
            for element in elements:
                if not isinstance(element, cst.Name):
                    return None
                names.add(element.value)
        return names

    # ---- backward ---------------------------------------------------------------------------
    @property
    def grad_params(self) -> Optional[list[Param]]:
        """backward's gradient parameters (after ctx); None when it takes ``*grads``."""
        backward = self.backward
        if backward is None or backward.star_args is not None:
            return None
        return backward.params[1:]

    @property
    def grad_names(self) -> frozenset[str]:
        backward = self.backward
        if backward is None:
            return frozenset()
        names = {p.name for p in backward.params[1:]}
        if backward.star_args:
            names.add(backward.star_args)
        return frozenset(names)

    # ---- what ctx holds ---------------------------------------------------------------------
    @cached_property
    def ctx_attribute_sets(self) -> list[CtxAttributeSet]:
        result = []
        for method in self.forward_methods:
            result.extend(_ctx_sets(method, self.ctx_names(method)))
        return result

    @cached_property
    def marked_dirty(self) -> Optional[set[str]]:
        """The names forward passes to ``ctx.mark_dirty(...)``; None when they cannot be read (a
        starred or computed argument, or a call in setup_context, where the names are unpacked
        from ``inputs``): rules then trust the marks."""
        names: set[str] = set()
        for method in self.forward_methods:
            for node in method.nodes_of(cst.Call):
                if is_ctx_attr(node.func, self.ctx_names(method), "mark_dirty"):
                    if method.name == "setup_context":
                        return None
                    for arg in node.args:
                        if arg.star or not isinstance(arg.value, cst.Name):
                            return None
                        names.add(arg.value.value)
        return names

    @cached_property
    def instance_state(self) -> frozenset[str]:
        """The attributes that the class's own ``__init__`` sets on ``self`` and that its own
        forward or backward, written as instance methods (neither static nor class methods), read
        on their first parameter: a Function written to be instantiated (``MyFn(scale)(x)``, the
        style of PyTorch < 0.4). PyTorch no longer runs one: calling an instance raises
        RuntimeError, and ``MyFn.apply`` hands forward a ctx, which has none of these attributes.
        Empty for every other class."""
        forward = self.own("forward")
        if forward is None or forward.is_static or forward.is_classmethod:
            return frozenset()
        init = next((s for s in self.parsed.node.body.body
                     if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        if init is None or not init.params.params:
            return frozenset()
        set_by_init = _attributes_set_on(init, init.params.params[0].name.value)
        read: set[str] = set()
        for method in (forward, self.own("backward")):
            if method is not None and not (method.is_static or method.is_classmethod):
                read |= {node.attr.value for node in method.nodes_of(cst.Attribute)
                         if is_ctx_attr(node, method.ctx_name_set)}
        return frozenset(set_by_init & read)

    @cached_property
    def ctx_escapes(self) -> bool:
        """ctx handed to other code in forward/setup_context (a helper, setattr with a variable,
        ``ctx.__dict__``): its attributes may be set where we cannot see."""
        return any(_ctx_escapes(m, self.ctx_names(m)) for m in self.forward_methods)

    @cached_property
    def ctx_attributes_set(self) -> Optional[set[str]]:
        """Every ctx attribute this class (and its Function bases in the file) sets anywhere;
        None when that cannot be known (a base in another file, ctx passed to helpers)."""
        if self.ctx_escapes or (self.unknown_base and self.inherited_from_project is None):
            return None
        attrs = {s.attr for s in self.ctx_attribute_sets}
        if self.inherited_from_project is not None:
            attrs |= self.inherited_from_project[1]
        for method in self.methods.values():
            attrs |= {s.attr for s in _ctx_sets(method, self.ctx_names(method))}
        for base in self.bases:
            inherited = base.ctx_attributes_set
            if inherited is None:
                return None
            attrs |= inherited
        return attrs

    @cached_property
    def save_calls(self) -> list[SaveCall]:
        calls = []
        for method in self.forward_methods:
            names = self.ctx_names(method)
            for node in method.nodes:
                if isinstance(node, cst.Call) and is_ctx_attr(node.func, names, "save_for_backward"):
                    args = None if has_star_arg(node) else [a.value for a in node.args]
                    calls.append(SaveCall(node, method, args))
        return calls

    @cached_property
    def saved_count(self) -> Optional[int]:
        """How many tensors save_for_backward keeps, when every call agrees."""
        counts = {len(c.args) if c.args is not None else None for c in self.save_calls}
        if len(counts) != 1 or None in counts:
            return None
        return counts.pop()

    @cached_property
    def tensor_ctx_attributes(self) -> set[str]:
        """ctx attributes that forward/setup_context certainly set to a tensor (AGL201/AGL207's findings)."""
        result = set()
        for attr_set in self.ctx_attribute_sets:
            if attr_set.index is not None:
                continue  # an element: the attribute itself holds the container
            if attr_set.value is not None and self.judge(attr_set.method)(attr_set.value) is Tensorness.TENSOR:
                result.add(attr_set.attr)
        return result

    @cached_property
    def certainty(self) -> "Certainty":
        """What the model could not read (decorators it does not understand), and whether a
        conclusion about a method's interface is certain (``analysis.certainty``)."""
        from autograd_lint.analysis.certainty import Certainty

        return Certainty(self)

    @cached_property
    def provenance(self) -> "ProvenanceModel":
        """Where ctx and saved tensors came from (input, output, private) and how backward uses
        them: what tells a harmful instance of AGL201/AGL302 from a harmless one."""
        from autograd_lint.analysis.provenance import ProvenanceModel

        return ProvenanceModel(self)

    @cached_property
    def ctx_containers(self) -> dict[str, tuple[Optional[int], dict[Union[int, str], Tensorness]]]:
        """ctx attributes that forward/setup_context set once, to a tuple/list/dict display:
        attribute -> (its length, None for a dict or with a starred element; the tensor-ness of
        each element by position or key). What backward reads back from ``ctx.tensors[1]`` or
        ``a, b = ctx.cache``."""
        whole_sets: dict[str, list[CtxAttributeSet]] = {}
        for attr_set in self.ctx_attribute_sets:
            if attr_set.index is None:
                whole_sets.setdefault(attr_set.attr, []).append(attr_set)
        result = {}
        for attr, sets in whole_sets.items():
            value = sets[0].value
            if len(sets) != 1 or not isinstance(value, (cst.Tuple, cst.List, cst.Dict)):
                continue
            judge = self.judge(sets[0].method)
            elements = {index: judge(element) for index, element in container_elements(value)}
            fixed = isinstance(value, (cst.Tuple, cst.List)) and not any(
                isinstance(e, cst.StarredElement) for e in value.elements)
            result[attr] = (len(value.elements) if fixed else None, elements)
        return result

    def ctx_element(self, node: cst.CSTNode, ctx_names: frozenset[str]) -> Optional[Tensorness]:
        """The tensor-ness of ``ctx.tensors[1]`` / ``ctx.d["a"]`` read outside forward, from what
        forward stored there; None when ``node`` is no such read."""
        if not (isinstance(node, cst.Subscript) and is_ctx_attr(node.value, ctx_names) and len(node.slice) == 1):
            return None
        container = self.ctx_containers.get(node.value.attr.value)
        index = node.slice[0].slice
        if container is None or not isinstance(index, cst.Index):
            return None
        key = literal_key(index.value)
        length, elements = container
        if isinstance(key, int) and length is not None:
            key = key % length if -length <= key < length else None
        return elements.get(key, Tensorness.UNKNOWN) if key is not None else Tensorness.UNKNOWN

    def ctx_unpacked(self, value: cst.CSTNode, ctx_names: frozenset[str], count: int) -> Optional[list[Tensorness]]:
        """``a, b = ctx.cache``: the tensor-ness of each name, when forward stored a container of
        exactly ``count`` elements there; else None."""
        if not is_ctx_attr(value, ctx_names):
            return None
        container = self.ctx_containers.get(value.attr.value)
        if container is None or container[0] != count:
            return None
        return [container[1].get(i, Tensorness.UNKNOWN) for i in range(count)]

    def is_saved_tensors(self, node: cst.CSTNode, method: Method) -> bool:
        return (type(node) is cst.Attribute and node.attr.value in SAVED_TENSORS
                and is_ctx_attr(node, self.ctx_names(method)))

    # ---- tensor-ness ------------------------------------------------------------------------
    def judge(self, method: Method) -> TensorJudge:
        judges = self.__dict__.setdefault("_judges", {})
        if method.name not in judges:
            judges[method.name] = self._build_judge(method)
        return judges[method.name]

    def _build_judge(self, method: Method) -> TensorJudge:
        known: dict[str, Tensorness] = {}
        if method.name == "forward":
            known.update(self.input_tensorness)
        elif method.name == "backward":
            for name in self.grad_names:
                known[name] = Tensorness.TENSOR
            if method.star_args:
                known[method.star_args] = Tensorness.NOT_TENSOR  # `*grads` is a tuple of tensors
        elif method.name == "setup_context" and len(method.params) >= 3:
            known[method.params[2].name] = Tensorness.TENSOR if self.output_count == 1 else Tensorness.UNKNOWN
        ctx_names = self.ctx_names(method)
        assignments = local_assignments(method, ctx_names, self)
        tensor_attrs = self.tensor_ctx_attributes if method.name == "backward" else set()

        star_inputs = self.known_inputs if method.name == "forward" and method.star_args else []
        from_star = len(star_inputs) - len(method.params) + (1 if self.style == "legacy" else 0)

        def tensor_sources(node: cst.BaseExpression) -> Optional[Tensorness]:
            if star_inputs and isinstance(node, cst.Subscript):
                position = subscript_position(node, method.star_args)  # `args[0]`: an input
                if position is not None and 0 <= position < from_star:
                    return self.input_tensorness.get(star_inputs[len(star_inputs) - from_star + position].name,
                                                     Tensorness.UNKNOWN)
            if method.name == "setup_context" and isinstance(node, cst.Subscript):
                position = _constant_index(node, method)  # inputs[1] is forward's second input
                inputs = self.inputs or []
                if position is not None and position < len(inputs):
                    return self.input_tensorness.get(inputs[position].name, Tensorness.UNKNOWN)
            if isinstance(node, cst.Subscript) and any(
                is_ctx_attr(node.value, ctx_names, a) for a in SAVED_TENSORS
            ):
                return Tensorness.TENSOR
            if method.name not in ("forward", "setup_context"):
                element = self.ctx_element(node, ctx_names)
                if element is not None:
                    return element
            if isinstance(node, cst.Attribute) and is_ctx_attr(node, ctx_names):
                if node.attr.value in tensor_attrs:
                    return Tensorness.TENSOR
                return Tensorness.UNKNOWN
            return None

        return TensorJudge(known, assignments, self.qualify, tensor_sources)


# --- building -------------------------------------------------------------------------------

def build_function_model(
    info: ClassInfo,
    parsed: ParsedClass,
    qualify: Callable[[str], str],
    local_models: dict[str, FunctionModel],
    project: Optional[ProjectFacts] = None,
    key: str = "",
) -> FunctionModel:
    methods: dict[str, Method] = {}
    for statement in parsed.node.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value in METHOD_NAMES:
            methods[statement.name.value] = _method(statement, info.name, parsed)
    bases = [local_models[b] for b in info.function_bases if b in local_models]
    for base in bases:
        for name, method in base.methods.items():
            if name not in methods:
                methods[name] = replace(method, inherited=True)
    unknown_base = info.has_unknown_function_base or any(b.unknown_base for b in bases) or (
        len(bases) < len(info.function_bases)
    )
    remote_bases = [info.base_keys[b] for b in info.function_bases if b not in local_models and b in info.base_keys]
    remote_bases += [n for base in bases if base.unknown_base for n in base.remote_bases]
    if remote_bases and project is not None and not bases:
        remote = _remote_methods(project, remote_bases, qualify)
        if remote is not None:
            inherited_methods, qualify = remote
            for name, method in inherited_methods.items():
                methods.setdefault(name, method)
    inherited = project.inherited(remote_bases) if project is not None and remote_bases else None
    # setup_context of its own, inherited, or assigned after the class body (`MyFn.setup_context = ...`)
    style = "new" if "setup_context" in methods or "setup_context" in info.methods or (
        inherited and "setup_context" in inherited[0]) else "legacy"
    return FunctionModel(
        name=info.name, info=info, parsed=parsed, methods=methods, style=style, qualify=qualify,
        bases=bases, unknown_base=unknown_base, inherited_from_project=inherited,
        remote_bases=remote_bases, key=key or info.name, project=project,
    )


def _remote_methods(project: ProjectFacts, base_keys: list[str], qualify: Callable[[str], str]
                    ) -> Optional[tuple[dict[str, Method], Callable[[str], str]]]:
    """The autograd methods that Function bases in other modules (``base_keys``, and their own
    bases, first found first) define, read from their source in the project facts, and the
    names of the subclass's module and theirs together; None when one of them is not known, or
    its module means another thing than the subclass's by a name (its code would be misread:
    nothing is inherited, as before)."""
    methods: dict[str, Method] = {}
    extra: dict[str, str] = {}
    pending, seen = list(base_keys), set()
    while pending:
        key = pending.pop(0)
        if key in seen:
            continue
        seen.add(key)
        source = project.class_sources.get(key)
        if source is None or source.star_imports:
            return None
        for name, target in source.imports:
            bound = qualify(name)
            if (bound != name and bound != target) or extra.setdefault(name, target) != target:
                return None
        parsed = _parsed_remote(source)
        if parsed is None:
            return None
        for statement in parsed.node.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value in METHOD_NAMES:
                methods.setdefault(statement.name.value,
                                   replace(_method(statement, key.rpartition(".")[2], parsed), inherited=True))
        if key not in project.roots:
            pending.extend(project.bases.get(key, []))

    def both(dotted: str) -> str:
        qualified = qualify(dotted)
        head, _, rest = dotted.partition(".")
        if qualified == dotted and head in extra:
            return extra[head] + ("." + rest if rest else "")
        return qualified

    return methods, both


_REMOTE_PARSED: dict[ClassSource, Optional[ParsedClass]] = {}


def _parsed_remote(source: ClassSource) -> Optional[ParsedClass]:
    """A class of another module, parsed once per process. Its positions are in another file:
    ``RemoteClass.span`` places them on line 0, and the pipeline drops findings there."""
    if source not in _REMOTE_PARSED:
        try:
            _REMOTE_PARSED[source] = RemoteClass(parse_module(source.text), source.path, source.line,
                                                 source.column)
        except (cst.ParserSyntaxError, StopIteration):
            _REMOTE_PARSED[source] = None
    return _REMOTE_PARSED[source]


def bind_arguments(helper: Method, call: cst.Call) -> Optional[dict[str, cst.BaseExpression]]:
    """The helper's parameter each argument of ``call`` binds (positions, then keywords); None
    with ``*args``/``**kwargs`` in the call (what goes where is unknown)."""
    if any(arg.star for arg in call.args):
        return None
    names = [p.name for p in helper.params]
    bound: dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(a for a in call.args if a.keyword is None):
        if i < len(names):
            bound[names[i]] = arg.value
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in names:
            bound[arg.keyword.value] = arg.value
    return bound


def method_of(node: cst.FunctionDef, owner: str, parsed: ParsedClass) -> Method:
    return _method(node, owner, parsed)


def _method(node: cst.FunctionDef, owner: str, parsed: ParsedClass) -> Method:
    decorators, written = [], []
    for decorator in node.decorators:
        expression = decorator.decorator
        if isinstance(expression, cst.Call):
            expression = expression.func
        name = dotted(expression)
        written.append(name or "")  # "": an expression we cannot name (`@deco[0]`), never readable
        if name:
            decorators.append(name.rsplit(".", 1)[-1])
    params = [
        Param(p.name.value, p, p.default, annotation_text(p))
        for p in list(node.params.posonly_params) + list(node.params.params)
    ]
    if "classmethod" in decorators and params:
        params = params[1:]
    star = node.params.star_arg
    star_args = star.name.value if isinstance(star, cst.Param) else None
    return Method(node.name.value, node, decorators, params, star_args, owner, parsed,
                  decorator_names=tuple(written))


def _ctx_sets(method: Method, ctx_names: frozenset[str]) -> list[CtxAttributeSet]:
    result = []
    for node in method.nodes_of(cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Call):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                result.extend(_target_sets(target.target, node.value, node, method, ctx_names))
        elif isinstance(node, cst.AnnAssign):
            result.extend(_target_sets(node.target, node.value, node, method, ctx_names))
        elif isinstance(node, cst.AugAssign) and is_ctx_attr(node.target, ctx_names):
            result.append(CtxAttributeSet(node.target.attr.value, None, node, method))
        elif isinstance(node, cst.Call) and dotted(node.func) == "setattr":
            args = positional_args(node)
            if (len(args) == 3 and isinstance(args[0].value, cst.Name) and args[0].value.value in ctx_names
                    and isinstance(args[1].value, cst.SimpleString)):
                result.append(CtxAttributeSet(args[1].value.evaluated_value, args[2].value, node, method))
    return result


def _target_sets(target, value, statement, method, ctx_names) -> list[CtxAttributeSet]:
    if is_ctx_attr(target, ctx_names):
        attr = target.attr.value
        whole = CtxAttributeSet(attr, value, statement, method)
        return [whole] + [CtxAttributeSet(attr, element, statement, method, index)
                          for index, element in container_elements(value)]
    if isinstance(target, (cst.Tuple, cst.List)):
        values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
        result = []
        for i, element in enumerate(target.elements):
            element_value = None
            if values is not None and len(values) == len(target.elements) and not isinstance(
                values[i], cst.StarredElement
            ):
                element_value = values[i].value
            result.extend(_target_sets(element.value, element_value, statement, method, ctx_names))
        return result
    return []


def container_elements(value: Optional[cst.BaseExpression]) -> list[tuple[Union[int, str], cst.BaseExpression]]:
    """The elements of a tuple/list/dict display with where they sit: ``(None, B)`` -> index 0 and
    1, ``(*xs, y)`` -> ``y`` at -1 (positions after a starred element count from the end; the
    starred part itself is left out), ``{"a": a}`` -> key ``"a"``. Empty for anything else."""
    if isinstance(value, (cst.Tuple, cst.List)):
        elements = value.elements
        starred = [i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement)]
        result: list[tuple[Union[int, str], cst.BaseExpression]] = []
        for i, element in enumerate(elements):
            if isinstance(element, cst.StarredElement):
                continue
            if not starred or i < starred[0]:
                result.append((i, element.value))
            elif i > starred[-1]:
                result.append((i - len(elements), element.value))
        return result
    if isinstance(value, cst.Dict):
        return [(e.key.evaluated_value, e.value) for e in value.elements
                if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                and isinstance(e.key.evaluated_value, str)]
    return []


def _names_only_bound_to_none(method: Method) -> set[str]:
    """Local names whose every binding in ``method`` is a plain ``name = None``."""
    bound: dict[str, bool] = {}
    for node in method.nodes_of(cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.WithItem, cst.NamedExpr):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                for name in target_names(target.target):
                    bound[name] = bound.get(name, True) and isinstance(target.target, cst.Name) and is_none(node.value)
        else:
            target = node.target if not isinstance(node, cst.WithItem) else (node.asname.name if node.asname else None)
            for name in target_names(target):
                bound[name] = bound.get(name, True) and isinstance(node, cst.AnnAssign) and is_none(node.value)
    return {name for name, none in bound.items() if none}



def _ctx_escapes(method: Method, ctx_names: frozenset[str]) -> bool:
    for node in method.nodes_of(cst.Call, cst.Attribute):
        if isinstance(node, cst.Call):
            name = dotted(node.func) or ""
            for arg in node.args:
                if isinstance(arg.value, cst.Name) and arg.value.value in ctx_names:
                    if name == "setattr":
                        args = positional_args(node)
                        if len(args) >= 2 and isinstance(args[1].value, cst.SimpleString):
                            continue
                    return True
        elif isinstance(node, cst.Attribute) and is_ctx_attr(node, ctx_names, "__dict__"):
            return True
    return False


def local_assignments(method: Method, ctx_names: frozenset[str], model: Optional[FunctionModel]) -> dict[str, list[Assignment]]:
    """Every value bound to each local name of ``method`` (None: a binding we cannot read)."""
    result: dict[str, list[Assignment]] = {}

    def bind(target: cst.CSTNode, value: Assignment) -> None:
        if isinstance(target, cst.Name):
            result.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements) and not any(
                isinstance(e, cst.StarredElement) for e in value.elements
            ):
                for t, v in zip(elements, value.elements):
                    bind(t.value, v.value)
                return
            element_value: Assignment = None
            unpacked = (model.ctx_unpacked(value, ctx_names, len(elements))
                        if model is not None and method.name not in ("forward", "setup_context")
                        and value is not None and not isinstance(value, Tensorness) else None)
            if unpacked is not None and not any(isinstance(e, cst.StarredElement) for e in elements):
                for element, judged in zip(elements, unpacked):
                    bind(element.value, judged)  # `a, b = ctx.cache`: what forward stored there
                return
            if value is not None and not isinstance(value, Tensorness) and _is_saved_tensors_source(value, ctx_names, result):
                element_value = Tensorness.TENSOR
            elif (model is not None and method.name == "forward" and method.star_args is not None
                  and isinstance(value, cst.Name) and value.value == method.star_args):
                judged_inputs = model.input_tensorness  # `a, b = args`: forward's inputs by position
                for element in elements:
                    if isinstance(element, cst.StarredElement):
                        bind(element.value, None)
                        continue
                    name = element.value.value if isinstance(element.value, cst.Name) else None
                    bind(element.value, judged_inputs.get(name) if name in judged_inputs else None)
                return
            elif model is not None and method.name == "setup_context" and _is_inputs_param(value, method):
                for i, element in enumerate(elements):
                    inputs = model.inputs or []
                    judged = model.input_tensorness.get(inputs[i].name) if i < len(inputs) else None
                    bind(element.value, judged if judged is not None else None)
                return
            for element in elements:
                bind(element.value, element_value)
        elif isinstance(target, cst.StarredElement):
            bind(target.value, None)

    for target, value in method.binding_sites:
        bind(target, value)
    return result


def _is_saved_tensors_source(value, ctx_names, assignments) -> bool:
    if any(is_ctx_attr(value, ctx_names, a) for a in SAVED_TENSORS):
        return True
    # `saved = ctx.saved_tensors` then `a, b = saved`
    if isinstance(value, cst.Name):
        bound = assignments.get(value.value, [])
        return len(bound) == 1 and not isinstance(bound[0], Tensorness) and bound[0] is not None and any(
            is_ctx_attr(bound[0], ctx_names, a) for a in SAVED_TENSORS
        )
    return False


def _is_inputs_param(value, method: Method) -> bool:
    return isinstance(value, cst.Name) and len(method.params) >= 2 and value.value == method.params[1].name


def subscript_position(node: cst.Subscript, name: str) -> Optional[int]:
    """``args[1]`` -> 1 for ``name`` "args"; None for anything else."""
    if not (isinstance(node.value, cst.Name) and node.value.value == name):
        return None
    return constant_index(node)


def _constant_index(node: cst.Subscript, setup_context: Method) -> Optional[int]:
    """``inputs[1]`` inside setup_context -> 1 (the name of its second parameter, subscripted)."""
    return constant_index(node) if _is_inputs_param(node.value, setup_context) else None


def _attributes_set_on(function: cst.FunctionDef, owner: str) -> set[str]:
    """Every ``owner.<attr>`` that ``function`` assigns (``self.a = ...``, ``self.a, self.b = ...``)."""
    found: set[str] = set()

    def collect(target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == owner:
            found.add(target.attr.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                collect(element.value)

    for node in own_nodes(function):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                collect(target.target)
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            collect(node.target)
    return found
