"""What every generated reference page shares: tidy the Markdown, and write the page or
check that the committed one is current (``--check``: exit 1 when stale)."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def finish(lines: Sequence[str]) -> str:
    """The page's text: blank runs folded to one, one final newline."""
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip() + "\n"


def write_or_check(page: Path, text: str, command: str, argv: list[str] | None) -> int:
    """Write ``text`` to ``page``; with ``--check`` in ``argv``, only compare (1: stale,
    saying to run ``command``)."""
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        stale = not page.is_file() or page.read_text(encoding="utf-8") != text
        if stale:
            print(f"{page.relative_to(ROOT)} is stale: run {command}", file=sys.stderr)
        return int(stale)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    print(f"wrote {page.relative_to(ROOT)}")
    return 0
