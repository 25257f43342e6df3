"""Entry point: `python -m analysis --help` (the same command line as `python generate.py` and `carriers`)."""

from analysis.cli import main

raise SystemExit(main())
