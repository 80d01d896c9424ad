"""Copies of third-party libraries kept inside a repository.

A project often carries a library it did not write: ``static/jquery-3.6.0.js``, a Go module's
``vendor/`` folder, ``third_party/``. Their code is not the project's, and split into symbols
and blocks a single bundled library gives hundreds of nodes that compete with the project's own
code for every request. Such a file is indexed whole, as one node, like a text file. The rules
follow GitHub linguist's ``vendor.yml`` conventions, kept to the general ones: vendoring
folders anywhere in the path, and script or style files named for a release
(``name-1.2.3.js``) or minified (``name.min.js``).
"""

from __future__ import annotations

import re

__all__ = ["is_vendored"]

_FOLDERS = re.compile(
    r"(?:^|/)(?:vendor|vendors|third[-_]?party|3rd[-_]?party|node_modules|bower_components)/",
    re.IGNORECASE,
)
_RELEASED_ASSET = re.compile(
    r"(?:^|/)[^/]*?[-.]v?\d+\.\d+(?:\.\d+)?(?:[-.][0-9A-Za-z]+)*\.(?:js|mjs|cjs|css)$"
    r"|[-.]min\.(?:js|mjs|cjs|css)$",
    re.IGNORECASE,
)


def is_vendored(path: str) -> bool:
    """True for a repository-relative ``path`` that holds a copy of a third-party library."""
    return _FOLDERS.search(path) is not None or _RELEASED_ASSET.search(path) is not None
