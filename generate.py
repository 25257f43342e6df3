"""Generate everything: `python generate.py --help`."""
from analysis.cli import main

raise SystemExit(main())
