"""Control flow inside one method: the paths through it, and which names alias a tracked tensor.

Two questions rules ask of a method body:
- "along which paths does it run?" (AGL204: two saves on one path; AGL108: a return path that
  never reads grad_output) -> ``enumerate_paths``;
- "is this statement an in-place write into a tracked tensor or one of its views, at this point
  of the method?" (AGL301/302/303) -> ``AliasTracker(...).run(method)``, which follows
  assignments in order (``g = g.clone()`` ends the aliasing; after an ``if`` only aliases made on
  every branch survive) and returns the ``InplaceWrite``s. Which tensors each rule tracks, and
  the helpers it follows, are set up in ``autograd_lint/rules/_inplace.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import libcst as cst

from autograd_lint.analysis.syntax import call_keyword, code_children, dotted, positional_args

PathElement = Union[cst.BaseSmallStatement, cst.BaseExpression, cst.FunctionDef, cst.ClassDef]


@dataclass
class Path:
    elements: list[PathElement]
    ends_with: Optional[cst.CSTNode] = None  # the Return/Raise that ended it, None: fell off the end


def enumerate_paths(function: cst.FunctionDef, limit: int = 1024) -> Optional[list[Path]]:
    """Every path through ``function``'s body (loops run zero or one time). None if more than
    ``limit`` paths: rules then stay silent rather than guess."""
    try:
        paths = _block_paths(_body(function), [Path([])], limit)
    except _TooManyPaths:
        return None
    return paths


class _TooManyPaths(Exception):
    pass


def _body(node: cst.CSTNode) -> list[cst.BaseStatement]:
    body = getattr(node, "body", None)
    if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        return list(body.body)
    return []


def _block_paths(statements, paths: list[Path], limit: int) -> list[Path]:
    for statement in statements:
        open_paths = [p for p in paths if p.ends_with is None]
        closed = [p for p in paths if p.ends_with is not None]
        if not open_paths:
            return paths
        paths = closed + _statement_paths(statement, open_paths, limit)
        if len(paths) > limit:
            raise _TooManyPaths
    return paths


def _extend(paths: list[Path], element: PathElement) -> list[Path]:
    return [Path(p.elements + [element]) for p in paths]


def _statement_paths(statement, paths: list[Path], limit: int) -> list[Path]:
    if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        for small in statement.body:
            paths = [
                Path(p.elements + [small], small if isinstance(small, (cst.Return, cst.Raise)) else None)
                if p.ends_with is None else p
                for p in paths
            ]
        return paths
    if isinstance(statement, cst.If):
        paths = _extend(paths, statement.test)
        taken = _block_paths(_body(statement), paths, limit)
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            not_taken = _statement_paths(orelse, paths, limit)
        elif isinstance(orelse, cst.Else):
            not_taken = _block_paths(_body(orelse), paths, limit)
        else:
            not_taken = paths
        return taken + not_taken
    if isinstance(statement, (cst.For, cst.While)):
        header = statement.iter if isinstance(statement, cst.For) else statement.test
        paths = _extend(paths, header)
        once = _block_paths(_body(statement), paths, limit)
        after = [p for p in once if p.ends_with is None] + paths
        if statement.orelse is not None:
            after = _block_paths(_body(statement.orelse), after, limit)
        return [p for p in once if p.ends_with is not None] + after
    if isinstance(statement, cst.With):
        for item in statement.items:
            paths = _extend(paths, item.item)
        return _block_paths(_body(statement), paths, limit)
    if isinstance(statement, cst.Try):
        body = _block_paths(_body(statement), paths, limit)
        alternatives = list(body)
        for handler in statement.handlers:
            alternatives += _block_paths(_body(handler), paths, limit)
        if statement.orelse is not None:
            alternatives = [p for p in alternatives if p not in body] + _block_paths(
                _body(statement.orelse), body, limit
            )
        if statement.finalbody is not None:
            open_paths = [p for p in alternatives if p.ends_with is None]
            closed = [p for p in alternatives if p.ends_with is not None]
            alternatives = closed + _block_paths(_body(statement.finalbody), open_paths, limit)
        return alternatives
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        # A nested helper runs later, when called on this path: what it reads counts as read here.
        return _extend(paths, statement)
    # match statements and anything newer: treat the body as opaque but keep the path going
    return paths


# --- in-place writes ---------------------------------------------------------------------------

# Methods whose result shares memory with the receiver (a later in-place write through it
# changes the receiver).
VIEW_METHODS = frozenset(
    {"view", "view_as", "reshape", "reshape_as", "contiguous", "t", "transpose", "permute",
     "unsqueeze", "squeeze", "expand", "expand_as", "narrow", "select", "flatten", "unflatten",
     "detach", "as_strided", "diagonal", "movedim", "swapaxes", "swapdims", "unfold", "real",
     "imag", "view_as_real", "view_as_complex", "requires_grad_", "T", "mT", "H", "mH", "data"}
)
# Trailing-underscore methods that do not write the tensor's values.
NOT_VALUE_WRITES = frozenset({"requires_grad_", "retain_grad_", "share_memory_", "record_stream_",
                              "set_", "resize_", "resize_as_", "_"})
# In-place methods that change only the receiver's own shape and strides, not the memory it
# shares: on the tracked tensor object itself they change what every holder of it sees (a
# gradient shared with another branch, the caller's input); on a view (another object over the
# same memory) they change nothing anyone else holds.
METADATA_ONLY_INPLACE = frozenset({"unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_",
                                   "swapaxes_", "as_strided_"})


@dataclass
class InplaceWrite:
    statement: cst.BaseSmallStatement  # where to report
    name: str  # the tracked name written through (for the message)
    how: str  # "augmented assignment", "item assignment", "mul_()", "out=", ...
    written: cst.CSTNode  # the expression written to
    through_data: bool = False  # `x.data[i] = v`: a write past the version counter
    where: str = ""  # " in _helper() at line 12": made by a helper the statement calls
    # With ``where``: (that helper's ``Method``, the write's statement in it), for a related location.
    made_in: Optional[tuple] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        stack = [self.written]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Attribute):
                self.through_data |= node.attr.value == "data"
                stack.append(node.value)
            elif isinstance(node, (cst.Subscript, cst.Call)):
                stack.append(node.value if isinstance(node, cst.Subscript) else node.func)

    @property
    def described(self) -> str:
        """``how``, with the write's path: through ``.data`` the version counter never sees it,
        so no check anywhere (this node's or another's) can catch the change."""
        how = f"{self.how} through .data (unseen by the version counter)" if self.through_data else self.how
        return how + self.where


class AliasTracker:
    """Follows, statement by statement, which local names refer to a tracked tensor or a view."""

    def __init__(
        self,
        initial: set[str],
        is_source: Callable[[cst.BaseExpression], bool] = lambda _: False,
        unpacks_sources: Callable[[cst.BaseExpression], Union[bool, list[bool]]] = lambda _: False,
        qualify: Callable[[str], str] = lambda name: name,
        helper_writes: Optional[Callable[..., list["InplaceWrite"]]] = None,
        known_truth: Optional[dict[str, bool]] = None,
        unpacks_element: Optional[Callable[[cst.BaseExpression, int], bool]] = None,
    ) -> None:
        self.initial = frozenset(initial)
        # When given, `a, b = value` tracks only the elements it accepts (one saved tensor of
        # several), instead of every name `unpacks_sources` would give.
        self.unpacks_element = unpacks_element
        # (statement, call, aliases, tracker) -> the writes a helper called here makes into the
        # tracked tensors passed to it (see autograd_lint/rules/_inplace.py): analysed as part of this method.
        self.helper_writes = helper_writes
        # Names whose truth is known throughout (a helper's `inplace=False` argument): an `if` on
        # one runs only the branch it decides.
        self.known_truth = known_truth or {}
        self.is_source = is_source  # e.g. ctx.saved_tensors[0]
        # e.g. ctx.saved_tensors in `a, b = ...`: True (every name), or one flag per position
        # (`a, b = ctx.cache` where forward stored `(x, n)`: only `a`)
        self.unpacks_sources = unpacks_sources
        self.qualify = qualify
        self.writes: list[InplaceWrite] = []

    def run(self, function: cst.FunctionDef) -> list[InplaceWrite]:
        self._block(_body(function), _track(frozenset(), self.initial, itself=True))
        return self.writes

    # alias expressions
    def tracked(self, node: cst.BaseExpression, aliases: frozenset[str]) -> Optional[str]:
        """The tracked name ``node`` refers to (itself or through a view), else None."""
        if isinstance(node, cst.Name):
            return node.value if node.value in aliases else None
        if self.is_source(node):
            return (dotted(node) or cst.Module([]).code_for_node(node))
        if isinstance(node, cst.Attribute) and node.attr.value in VIEW_METHODS:
            return self.tracked(node.value, aliases)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
                node.func.attr.value in VIEW_METHODS or _returns_receiver(node.func.attr.value)):
            return self.tracked(node.func.value, aliases)
        if isinstance(node, cst.Subscript) and is_basic_index(node):
            return self.tracked(node.value, aliases)
        return None

    # statements
    def _block(self, statements, aliases: frozenset[str]) -> frozenset[str]:
        for statement in statements:
            aliases = self._statement(statement, aliases)
        return aliases

    def _statement(self, statement, aliases: frozenset[str]) -> frozenset[str]:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                self._find_writes(small, aliases)
                aliases = self._rebind(small, aliases)
            return aliases
        if isinstance(statement, cst.If):
            decided = self._decided(statement.test)
            orelse = statement.orelse
            if decided is True:
                return self._block(_body(statement), aliases)
            if decided is False:
                if isinstance(orelse, cst.If):
                    return self._statement(orelse, aliases)
                return self._block(_body(orelse), aliases) if isinstance(orelse, cst.Else) else aliases
            taken = self._block(_body(statement), aliases)
            if isinstance(orelse, cst.If):
                not_taken = self._statement(orelse, aliases)
            elif isinstance(orelse, cst.Else):
                not_taken = self._block(_body(orelse), aliases)
            else:
                not_taken = aliases
            return taken & not_taken
        if isinstance(statement, (cst.For, cst.While)):
            if isinstance(statement, cst.For):
                aliases = aliases - _bound_names(statement.target)
            after = self._block(_body(statement), aliases) & aliases
            if statement.orelse is not None:
                after = self._block(_body(statement.orelse), after)
            return after
        if isinstance(statement, cst.With):
            for item in statement.items:
                if item.asname is not None:
                    aliases = aliases - _bound_names(item.asname.name)
            return self._block(_body(statement), aliases)
        if isinstance(statement, cst.Try):
            after = self._block(_body(statement), aliases)
            for handler in statement.handlers:
                after &= self._block(_body(handler), aliases)
            if statement.orelse is not None:
                after = self._block(_body(statement.orelse), after)
            if statement.finalbody is not None:
                after = self._block(_body(statement.finalbody), after)
            return after
        return aliases

    def _decided(self, test: cst.BaseExpression) -> Optional[bool]:
        """The truth of an ``if`` test on a name of ``known_truth`` (``inplace``, ``not inplace``)."""
        if isinstance(test, cst.Name):
            return self.known_truth.get(test.value)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self._decided(test.expression)
            return None if inner is None else not inner
        return None

    def _rebind(self, small, aliases: frozenset[str]) -> frozenset[str]:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                aliases = self._bind(target.target, small.value, aliases)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            aliases = self._bind(small.target, small.value, aliases)
        return aliases

    def is_itself(self, node: cst.BaseExpression, aliases: frozenset[str]) -> bool:
        """``node`` is certainly the tracked tensor object itself, not a view of it."""
        if isinstance(node, cst.Name):
            return _itself(node.value) in aliases
        return self.is_source(node)

    def _bind(self, target, value, aliases: frozenset[str]) -> frozenset[str]:
        if isinstance(target, cst.Name):
            if value is not None and self.tracked(value, aliases) is not None:
                return _track(aliases, {target.value}, itself=self.is_itself(value, aliases))
            return aliases - {target.value}
        if isinstance(target, (cst.Tuple, cst.List)):
            names = [e.value for e in target.elements]
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(names):
                for t, v in zip(names, value.elements):
                    aliases = self._bind(t, v.value, aliases)
                return aliases
            bound = set().union(*(_bound_names(n) for n in names)) if names else set()
            if value is not None and self.unpacks_element is not None:
                starred = False
                for i, element in enumerate(target.elements):
                    starred = starred or isinstance(element, cst.StarredElement)
                    if not starred and self.unpacks_element(value, i):
                        aliases = _track(aliases, _bound_names(element.value), itself=True)
                    else:
                        aliases = aliases - _bound_names(element.value)
                return aliases
            unpacked = self.unpacks_sources(value) if value is not None else False
            if isinstance(unpacked, list) and len(unpacked) == len(names):
                for name, is_tracked in zip(names, unpacked):
                    aliases = (_track(aliases, _bound_names(name), itself=True) if is_tracked
                               else aliases - _bound_names(name))
                return aliases
            if unpacked is True:
                return _track(aliases, bound, itself=True)
            return aliases - bound
        return aliases

    def _find_writes(self, small, aliases: frozenset[str]) -> None:
        if isinstance(small, cst.AugAssign):
            name = self._written_target(small.target, aliases, allow_name=True)
            if name:
                self.writes.append(InplaceWrite(small, name, "augmented assignment", small.target))
        elif isinstance(small, cst.Assign):
            for target in small.targets:
                name = self._written_target(target.target, aliases, allow_name=False)
                if name:
                    how = "assignment to .data" if isinstance(target.target, cst.Attribute) else "item assignment"
                    self.writes.append(InplaceWrite(small, name, how, target.target))
                    break
        calls = [node for node in _expression_nodes(small) if isinstance(node, cst.Call)]
        for node in calls:
            found = self._inplace_call(node, aliases)
            if found:
                self.writes.append(InplaceWrite(small, *found))
                return
        if self.helper_writes is not None:
            for node in calls:
                found_in_helper = self.helper_writes(small, node, aliases, self)
                if found_in_helper:
                    self.writes.append(found_in_helper[0])  # one finding per statement, as above
                    return

    def _written_target(self, target, aliases, allow_name: bool) -> Optional[str]:
        if allow_name and isinstance(target, cst.Name):
            return target.value if target.value in aliases else None
        if isinstance(target, cst.Subscript):
            return self.tracked(target.value, aliases)
        if isinstance(target, cst.Attribute) and target.attr.value == "data":
            return self.tracked(target.value, aliases)  # `x.data = y` replaces x's values
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                name = self._written_target(element.value, aliases, allow_name=False)
                if name:
                    return name
        return None

    def _is_torch_callee(self, func: cst.BaseExpression) -> bool:
        name = dotted(func)
        return name is not None and self.qualify(name).startswith("torch.")

    def _inplace_call(self, call: cst.Call, aliases: frozenset[str]) -> Optional[tuple[str, str, cst.CSTNode]]:
        out = call_keyword(call, "out")
        # `out=` writes only for torch's own functions and tensor methods; a helper's `out=`
        # parameter (flash-attn's backward, xformers' Context) is just an argument.
        if out is not None and self._is_torch_callee(call.func):
            outs = [e.value for e in out.elements] if isinstance(out, (cst.Tuple, cst.List)) else [out]
            for value in outs:
                name = self.tracked(value, aliases)
                if name:
                    return name, "out=", value
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method.endswith("_") and not method.startswith("_") and method not in NOT_VALUE_WRITES:
                if method == "copy_" and _same_expression(call.args[0].value if call.args else None, func.value):
                    return None  # `t.copy_(t)` writes nothing new
                if method in METADATA_ONLY_INPLACE and not self.is_itself(func.value, aliases):
                    return None  # `g = g.unsqueeze(-1); g.unsqueeze_(-1)` reshapes a view of its own
                name = self.tracked(func.value, aliases)
                if name and not _is_module_path(func.value, self.qualify):
                    return name, f"{method}()", func.value
        name_of_func = dotted(func)
        args = positional_args(call)
        if name_of_func and args:
            qualified = self.qualify(name_of_func)
            last = qualified.rsplit(".", 1)[-1]
            if qualified.startswith("torch.") and last.endswith("_") and not last.startswith("_"):
                name = self.tracked(args[0].value, aliases)
                if name:
                    return name, f"{last}()", args[0].value
            inplace = call_keyword(call, "inplace")
            if isinstance(inplace, cst.Name) and inplace.value == "True":
                name = self.tracked(args[0].value, aliases)
                if name:
                    return name, "inplace=True", args[0].value
        return None


def _returns_receiver(method: str) -> bool:
    """A tensor's in-place methods return the tensor itself, so a chain keeps writing into it:
    ``grad.resize_as_(x).copy_(y)`` overwrites ``grad`` (brevitas' example loss)."""
    return method.endswith("_") and not method.startswith("_")


def _itself(name: str) -> str:
    """The marker, kept among the tracked names, that ``name`` is bound to the tracked tensor
    object itself (not to a view of it). Branches meet by intersection, so the marker survives
    only where every path bound the object itself."""
    return f"{name}:itself"


def _track(aliases: frozenset[str], names: set[str], itself: bool) -> frozenset[str]:
    markers = {_itself(name) for name in names}
    return (aliases | names | markers) if itself else (aliases | names) - markers


def _is_module_path(node, qualify) -> bool:
    name = dotted(node)
    return name is not None and qualify(name).startswith("torch")


def is_basic_index(node: cst.Subscript) -> bool:
    """``x[0]``, ``x[:, 1:]``, ``x[..., None]``: indexing that returns a view (not a mask/gather)."""
    for element in node.slice:
        index = element.slice
        if isinstance(index, cst.Slice):
            continue
        if isinstance(index, cst.Index):
            value = index.value
            if isinstance(value, (cst.Integer, cst.Ellipsis)) or (
                isinstance(value, cst.Name) and value.value == "None"
            ) or (isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer)):
                continue
        return False
    return True


def _bound_names(target) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_bound_names(e.value) for e in target.elements)) if target.elements else set()
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    return set()


def _expression_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Nodes of a small statement, not descending into lambdas."""
    result = []
    stack = [node]
    while stack:
        current = stack.pop()
        result.append(current)
        if type(current) is not cst.Lambda:  # no subclasses
            stack.extend(reversed(code_children(current)))
    return result


def _same_expression(a, b) -> bool:
    return a is not None and b is not None and a.deep_equals(b)
