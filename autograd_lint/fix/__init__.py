"""``--fix`` / ``--diff`` / ``--unsafe-fixes``: libcst rewrites keyed by findings.

A finding says where (line, column, class, method); a fixer (one module per code, listed in
``registry``) finds the matching nodes in a whole-file libcst tree and returns a ``Fix``: the
nodes to replace and whether the change is *safe* (keeps the code's meaning) or *unsafe* (may
change behaviour; applied only with ``--unsafe-fixes``). ``apply`` runs the fixers to a fixed
point, checks the result still parses, and writes atomically or prints a diff.
"""
