"""How strong each piece of evidence about a forward input is (``analysis.input_evidence``)."""

from __future__ import annotations

import pytest

from autograd_lint.analysis.input_evidence import ParameterUses, judge_parameter
from autograd_lint.analysis.tensorness import Tensorness


def judge(annotation, uses=None, passed=None):
    return judge_parameter("value_in", annotation, None, uses or ParameterUses(), is_first=False,
                           by_name=False, passed=passed)


@pytest.mark.parametrize("annotation", [
    "torch.Tensor", "Tensor", "Optional[torch.Tensor]", "torch.Tensor | None", "Union[Tensor, None]",
    "'torch.Tensor'", "Optional[Union[torch.Tensor, torch.nn.Parameter]]", "torch.LongTensor",
])
def test_an_annotation_of_tensors_only_says_tensor(annotation):
    assert judge(annotation) is Tensorness.TENSOR


@pytest.mark.parametrize("annotation", [
    "Optional[Union[Tensor, AttentionBias]]", "Union[torch.Tensor, BlockDiagonalMask]",
    "torch.Tensor | AttentionBias", "Union[int, Tensor]", "List[Tensor]", "Tensor[",
])
def test_a_union_with_another_member_is_not_certainly_a_tensor(annotation):
    assert judge(annotation) is Tensorness.UNKNOWN


def test_a_use_as_a_plain_value_contradicts_a_tensor_annotation():
    counted = ParameterUses()
    counted.as_non_tensor = True  # `range(times)`
    assert judge("torch.Tensor", counted) is Tensorness.UNKNOWN
    both = ParameterUses()
    both.as_non_tensor = both.as_tensor = True
    assert judge("torch.Tensor", both) is Tensorness.TENSOR


@pytest.mark.parametrize("passed, expected", [
    (frozenset({"int"}), Tensorness.NOT_TENSOR),  # mmcv's im2col_step: torch.Tensor, always given 64
    (frozenset({"int", "float", "None"}), Tensorness.NOT_TENSOR),
    (frozenset({"None"}), Tensorness.TENSOR),  # None says nothing about the other calls: the annotation stands
    (None, Tensorness.TENSOR),  # some call passes something else (or no call is known)
])
def test_literals_at_every_call_site_outweigh_the_annotation(passed, expected):
    assert judge("torch.Tensor", passed=passed) is expected


def _uses_of(source: str, name: str = "fmt"):
    import libcst as cst

    from autograd_lint.analysis.input_evidence import collect_uses

    uses = ParameterUses()
    nodes = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node):
            nodes.append(node)
            return True

    cst.parse_module(source).visit(Collect())
    collect_uses(nodes, lambda node: uses if isinstance(node, cst.Name) and node.value == name else None,
                 lambda dotted: dotted)
    return uses


@pytest.mark.parametrize("source", ["y = fmt.exp()", "y = fmt.clamp(0, 1)", "n = fmt.dim()", "s = fmt.shape"])
def test_a_tensor_method_called_or_a_tensor_property_read_says_tensor(source):
    assert _uses_of(source).as_tensor


@pytest.mark.parametrize("source", ["e = fmt.exp", "ok = fmt.clamp == True", "q(x, fmt.wl, fmt.dim)"])
def test_a_tensor_method_read_as_a_value_is_another_objects_field(source):
    """qtorch's number formats have fields named `exp`, `clamp`, `dim`: not tensors (2 false
    AGL606 warnings on qtorch's quantizer in the sixth blind batch)."""
    uses = _uses_of(source)
    assert not uses.as_tensor and uses.foreign_member
