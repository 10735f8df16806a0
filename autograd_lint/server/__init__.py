"""``autograd-lint server``: the language server (``language_server``), started by the CLI.

This module only checks that the optional packages are there (pygls, lsprotocol: the
``server`` extra), so that ``autograd-lint server`` without them says what to install in one
line instead of a traceback; the linter's own install does not need them.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Sequence

EXIT_ERROR = 2
NEEDED = ("pygls", "lsprotocol")
# No release of autograd-lint is published: the extra is installed from a clone.
INSTALL_HINT = "from your clone of the repository, pip install -e '.[server]'"


def main(argv: Sequence[str]) -> int:
    """Serve the Language Server Protocol over stdin/stdout until the client exits."""
    if argv:
        print(f"autograd-lint: error: `autograd-lint server` takes no arguments (got {' '.join(argv)}); "
              "it speaks the Language Server Protocol on stdin/stdout", file=sys.stderr)
        return EXIT_ERROR
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        print(f"autograd-lint: error: the language server needs the server extra ({', '.join(NEEDED)}; "
              f"missing here: {', '.join(missing)}); {INSTALL_HINT}", file=sys.stderr)
        return EXIT_ERROR
    from autograd_lint.server.language_server import serve

    return serve()
