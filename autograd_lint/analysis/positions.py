"""Where each node of a libcst tree stands in its code: libcst's ``PositionProvider``, computed
five times faster.

Positions are what a finding's line and column come from (each class with findings) and what
the fixers find nodes by. ``MetadataWrapper.resolve(PositionProvider)`` costs three things:
generating the code while recording each node's start and end, a visit of the whole tree that
does nothing (the wrapper's pass for "batchable" providers, run with none), and a frozen
``CodeRange`` of two ``CodePosition``s for every node. On a file of 1,000 small Function classes
that was 3.8 s; ``node_positions`` generates the code once, with a recording state that keeps
plain tuples (0.8 s), and gives the very same numbers (tests/test_positions.py compares them
with libcst's on every fixture).

The state is libcst's own ``PositionProvidingCodegenState`` with its recording methods made
cheap, so each node type's code generation, which decides where a node starts and ends (the
``record_syntactic_position`` calls), is libcst's and not copied here. If a libcst release
changes that state, ``node_positions`` falls back to the wrapper rather than give wrong numbers.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

# (line, column, end line, end column) of a node, as libcst's ``CodeRange`` says them: lines
# 1-based, columns 0-based, the end column exclusive.
Position = tuple[int, int, int, int]

_NEWLINE = re.compile(r"\r\n?|\n")


def node_positions(module: cst.Module) -> dict[cst.CSTNode, Position]:
    """Each node of ``module`` (the module itself included) and its position, as
    ``PositionProvider`` gives it."""
    state = recording_state(module)
    if state is None:
        return _positions_by_wrapper(module)
    module._codegen(state)
    return state.provider


def recording_state(module: cst.Module):
    """A code generation state for ``module`` that records each node's position into its
    ``provider`` dict (as ``node_positions`` does); None with a libcst whose state is built
    otherwise (then only ``node_positions``'s fallback gives positions)."""
    try:
        return _recording_state(module)
    except (ImportError, TypeError, AttributeError):
        return None


def _positions_by_wrapper(module: cst.Module) -> dict[cst.CSTNode, Position]:
    from libcst.metadata import MetadataWrapper, PositionProvider

    # unsafe_skip_copy: positions must be keyed by the very nodes of ``module``.
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in ranges.items()}


_STATE_CLASS: Optional[type] = None


def _recording_state(module: cst.Module):
    global _STATE_CLASS
    if _STATE_CLASS is None:
        _STATE_CLASS = _make_state_class()
    # ``provider``: where libcst's state keeps its provider; here the dict of positions itself.
    return _STATE_CLASS(default_indent=module.default_indent, default_newline=module.default_newline,
                        provider={})


def _make_state_class() -> type:
    from libcst.metadata.position_provider import PositionProvidingCodegenState

    class _RecordingState(PositionProvidingCodegenState):
        """libcst's position-recording code generation state, recording tuples into a dict
        (``provider``) with no generator-based context manager and no regular expression for
        a token without a line break (nearly all of them)."""

        __slots__ = ()

        def add_indent_tokens(self) -> None:
            self.tokens.extend(self.indent_tokens)
            for token in self.indent_tokens:
                self._advance(token)

        def add_token(self, value: str) -> None:
            self.tokens.append(value)
            self._advance(value)

        def _advance(self, value: str) -> None:
            if "\n" in value or "\r" in value:
                segments = _NEWLINE.split(value)
                self.line += len(segments) - 1
                self.column = len(segments[-1])
            else:
                self.column += len(value)

        def before_codegen(self, node: cst.CSTNode) -> None:
            self._stack.append((self.line, self.column))

        def after_codegen(self, node: cst.CSTNode) -> None:
            # As libcst's: always pop; a syntactic position recorded inside stays.
            line, column = self._stack.pop()
            positions = self.provider
            if node not in positions:
                positions[node] = (line, column, self.line, self.column)

        def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                      end_node: Optional[cst.CSTNode] = None) -> "_SyntacticPosition":
            return _SyntacticPosition(self, node, start_node, end_node)

    return _RecordingState


class _SyntacticPosition:
    """libcst's ``record_syntactic_position`` as a plain context manager: the node's position is
    where its own tokens start and end, or its ``start_node``'s start and ``end_node``'s end."""

    __slots__ = ("state", "node", "start_node", "end_node", "line", "column")

    def __init__(self, state, node: cst.CSTNode, start_node: Optional[cst.CSTNode],
                 end_node: Optional[cst.CSTNode]) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.line, self.column = self.state.line, self.state.column

    def __exit__(self, *exception) -> bool:
        state = self.state
        positions = state.provider
        line, column = (positions[self.start_node][:2] if self.start_node is not None
                        else (self.line, self.column))
        end_line, end_column = (positions[self.end_node][2:] if self.end_node is not None
                                else (state.line, state.column))
        positions[self.node] = (line, column, end_line, end_column)
        return False
