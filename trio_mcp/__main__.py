"""``python -m trio_mcp``: the ``trio-mcp`` command line."""

from .cli import main

raise SystemExit(main())
