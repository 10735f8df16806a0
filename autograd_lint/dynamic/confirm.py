"""Confirm or refute one static finding by running the Function (inside the ``--dynamic`` child).

``confirm_finding(F, make_inputs, finding)`` picks the confirmer for the finding's code (see
``confirmers/``) and returns ``(confirmation, evidence)``: ``confirmed`` when PyTorch shows the
problem, ``not-reproduced`` when the run shows it does not happen on this example, and
``unverified`` when the check could not observe it. It never raises.

Codes the catalogue does not mark ``confirmable`` have nothing to run (a parse error, a missing
@staticmethod that works at runtime, a problem of the user's tests, which ``--dynamic`` does not
run): the "How --dynamic confirms it" section of their pages says why.
"""

from __future__ import annotations

from typing import Callable

from autograd_lint.catalogue import RULES

CONFIRMATIONS = ("confirmed", "not-reproduced", "unverified")

CONFIRMABLE_CODES: frozenset[str] = frozenset(code for code, info in RULES.items() if info.confirmable)


# Rules whose evidence is an exception forward itself raises, or one raised before forward runs
# (the catalogue's ``confirmed_when_forward_raises``; each page's "How --dynamic confirms it"
# names the exception): a candidate input on which forward raises can confirm them, whereas every
# other rule needs a forward that runs. Any other exception leaves the finding unverified (each
# confirmer checks what was raised).
SHOWN_BY_A_RAISING_FORWARD: frozenset[str] = frozenset(
    code for code, info in RULES.items() if info.confirmed_when_forward_raises)


def confirm_finding(function_class: type, make_inputs: Callable[[], tuple], finding: dict) -> tuple[str, str]:
    """Runs in the child process, torch imported. ``finding`` is ``Finding.to_json()``;
    ``make_inputs()`` returns a fresh tuple of positional args for ``function_class.apply``.
    Returns (confirmation, evidence). Never raises."""
    code = finding.get("code") if isinstance(finding, dict) else None
    if code not in CONFIRMABLE_CODES:
        return "unverified", f"{code} is not something --dynamic can confirm at runtime"
    try:
        # Imported here, not at the top: the confirmers import torch.
        import torch

        from autograd_lint.dynamic.confirmers import CONFIRMERS
        from autograd_lint.dynamic.confirmers.probe import Subject, Unverifiable
    except Exception as error:  # noqa: BLE001
        return "unverified", f"cannot load the confirmers: {_describe(error)}"
    try:
        with torch.enable_grad():  # every check needs the graph, whatever the caller's grad mode
            confirmation, evidence = CONFIRMERS[code](Subject(function_class, make_inputs, finding))
    except Unverifiable as reason:
        return "unverified", str(reason) or "the check could not observe the problem"
    except Exception as error:  # noqa: BLE001 - a confirmer's failure is an answer, not a crash
        return "unverified", f"the {code} check failed: {_describe(error)}"
    except SystemExit as error:  # the user's code may call sys.exit()
        return "unverified", f"the {code} check failed: the Function called sys.exit({error.code!r})"
    if confirmation not in CONFIRMATIONS or not evidence:
        return "unverified", f"the {code} check gave no usable answer ({confirmation!r})"
    return confirmation, evidence


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__
