"""A griffe extension for the Python API pages (mkdocs.yml, mkdocstrings): privsim's
docstrings cross-reference with Sphinx roles (:func:`run`, :class:`~privsim.x.Y`), which
Markdown would print as they are; each becomes inline code (`run`, `Y`)."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`<]+?)(?:\s*<[^>]+>)?`")


def plain(text: str) -> str:
    """``text`` with every role made inline code; ``~`` keeps the last dotted part."""

    def code(match: re.Match[str]) -> str:
        tilde, target = match.groups()
        return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"

    return ROLE.sub(code, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the roles of every docstring as the objects are loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
