"""A stdlib HTTP server on a free loopback port, served from a daemon thread (test doubles' base).

The class lives in the package (analysis.runner.simulate.server), where the simulated summariser uses it.
"""

from __future__ import annotations

from analysis.runner.simulate.server import LoopbackServer

__all__ = ["LoopbackServer"]
