"""BLAKE2b, the hash of the cache's keys and of the project facts' fingerprints.

Taken from hashlib's own ``_blake2`` module: importing ``hashlib`` also loads OpenSSL's
bindings, about 4 ms that every run would pay for a hash OpenSSL does not provide here.
"""

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter without CPython's module
    from hashlib import blake2b

__all__ = ["blake2b"]
