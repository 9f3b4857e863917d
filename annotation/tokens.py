"""Opaque public identifiers: random, unguessable, and carrying no meaning.

Every identifier an annotator can see (studies, units, presentations) is one of these.
"""

import secrets


def new_token() -> str:
    """A 22-character URL-safe random token (128 bits)."""
    return secrets.token_urlsafe(16)
