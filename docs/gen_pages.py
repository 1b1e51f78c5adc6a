"""Write every generated reference page, or check them all:

    python docs/gen_pages.py           # (re)write the pages
    python docs/gen_pages.py --check   # exit 1 if a page is stale

The pages and their generators: docs/reference/scenario-schema.md (docs/gen_schema.py,
from the config dataclasses), docs/reference/cli.md (docs/gen_cli.py, from the argparse
parser) and docs/reference/protocol-api.md (docs/gen_reference.py, from ProtocolSpec and
the protocol kit). tests/test_docs_generated.py and tests/test_reference_page.py fail when
a committed page differs from what its generator writes.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
GENERATORS = ("gen_schema", "gen_cli", "gen_reference")


def load(name: str) -> ModuleType:
    """One generator module, loaded from this folder."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return max(load(name).main(args) for name in GENERATORS)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))  # the privsim of this checkout
    raise SystemExit(main())
