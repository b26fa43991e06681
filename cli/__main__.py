"""`python -m cli`: the `lectio` command without its console script."""

import sys

from cli import main

sys.exit(main())
