"""Entry point: `python -m analysis.runner --help`."""

import sys

from analysis.runner.cli import main

sys.exit(main())
