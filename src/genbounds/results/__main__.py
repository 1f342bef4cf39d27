"""``python -m genbounds.results check|repair``: the ``store`` subcommand on its own."""

from genbounds.results.cli import store_main

raise SystemExit(store_main())
