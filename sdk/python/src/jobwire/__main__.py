"""`python -m jobwire`: the `jobwire` command."""

from jobwire.cli import main

raise SystemExit(main())
