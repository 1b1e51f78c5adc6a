"""``python -m privsim`` is the ``privsim`` command."""

from privsim.cli import main

raise SystemExit(main())
