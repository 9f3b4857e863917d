"""Opaque public identifiers: random, unguessable, and carrying no meaning.

Every identifier an annotator can see (studies, units, presentations) is one of these. They are
drawn from letters and digits only, so no token can start a spreadsheet formula (`=`, `+`, `-`,
`@`) when it lands in a CSV cell, and none needs escaping in a URL.
"""

import secrets
import string

ALPHABET = string.digits + string.ascii_letters  # 62 symbols
LENGTH = 22  # 62**22 > 2**130


def new_token() -> str:
    """A 22-character random token of letters and digits (130 bits)."""
    n = secrets.randbelow(len(ALPHABET) ** LENGTH)
    chars = []
    for _ in range(LENGTH):
        n, digit = divmod(n, len(ALPHABET))
        chars.append(ALPHABET[digit])
    return "".join(chars)
