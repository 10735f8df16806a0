"""The ``dynamic`` argument group of the CLI: ``--dynamic``, ``--device``, ``--dynamic-timeout``, ..."""

from __future__ import annotations

import argparse
from pathlib import Path

from autograd_lint.catalogue import RULES

DEVICES = ("cpu", "cuda", "auto")
SANDBOX_MODES = ("auto", "require", "off")
DEFAULT_TIMEOUT = 60.0  # seconds per module: the torch import alone takes ~2 s


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "dynamic (runs your code: imports each module in a child process)")
    group.add_argument("--dynamic", action="store_true",
                       help="import the linted modules (requires torch), build example inputs, run "
                       f"gradcheck/gradgradcheck and the other runtime checks ({runtime_codes()}) and "
                       "confirm or refute each finding")
    group.add_argument("--device", choices=DEVICES, default=None,
                       help="where --dynamic runs the checks: cpu (default), cuda (also compares with "
                       "the CPU: AGL904), or auto (cuda when a GPU is present)")
    group.add_argument("--dynamic-timeout", metavar="SECONDS", type=_positive_seconds, default=None,
                       help=f"time limit per module's child, import included; after a class that hangs, "
                       f"the module's remaining classes get a fresh child and the limit again (default: "
                       f"{DEFAULT_TIMEOUT:g})")
    group.add_argument("--no-declared-examples", action="store_true",
                       help="ignore @example / __autograd_lint_examples__ / config examples: see how far "
                       "inputs from call sites and signatures alone go")
    group.add_argument("--dynamic-report", metavar="FILE", default=None,
                       help="write a JSON report per Function class (checked or why not, where its "
                       f"inputs came from, what ran, seconds) to FILE; its JSON schema: {report_schema_path()}")
    group.add_argument("--dynamic-sandbox", choices=SANDBOX_MODES, default=None,
                       help="the children that run your code: no network, writes only to their scratch "
                       "directory, an environment stripped to what torch needs (Linux: network namespace, "
                       "Landlock). auto (default): what the kernel offers, said in the summary; require: exit 2 "
                       "where a protection is not available; off: run with your full rights and environment")
    group.add_argument("--dynamic-env", metavar="NAME", action="append", default=None,
                       help="pass the environment variable NAME to the children on purpose (repeatable); the "
                       "sandbox strips the others but those torch needs")
    group.add_argument("--dynamic-require-checked", action="store_true",
                       help="exit 1 when --dynamic could not check a Function class with gradcheck (no "
                       "inputs, only partly checked, the module failed to import, the class timed out, "
                       "crashed or exited, the import did not define it); each one is listed on stderr "
                       "either way")


def runtime_codes() -> str:
    """The codes --dynamic reports, as a range (``AGL901-AGL909``): the catalogue's runtime rows."""
    codes = [code for code, info in RULES.items() if not info.static]
    return f"{codes[0]}-{codes[-1]}" if len(codes) > 1 else codes[0]


# The report's schema: inside the installed package (pyproject force-includes it, as it does the
# rule pages), or docs/ of a checkout (an editable install has no copy in the package).
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
REPORT_SCHEMA_NAME = "dynamic-report.schema.json"
_SCHEMA_PATHS = (_PACKAGE_DIR / "schemas" / REPORT_SCHEMA_NAME, _PACKAGE_DIR.parent / "docs" / REPORT_SCHEMA_NAME)


def report_schema_path() -> Path:
    """Where the ``--dynamic-report`` schema is on this machine (the installed copy first)."""
    return next((path for path in _SCHEMA_PATHS if path.is_file()), _SCHEMA_PATHS[0])


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value
