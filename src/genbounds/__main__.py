"""``python -m genbounds``: see :mod:`genbounds.cli`."""

from genbounds.cli import main

raise SystemExit(main())
