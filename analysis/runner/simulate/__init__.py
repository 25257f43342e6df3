"""The simulated summariser: an OpenAI-compatible loopback server whose behaviour is a planted truth.

``replies`` shapes a summariser's reply to the runner's real requests (JSON for a schema arm, five
headings, prose); ``server`` serves a responder over HTTP on loopback; ``summariser`` is the
responder that plays the truth file (analysis.evidence.truth); ``command`` is
``python -m analysis.runner simulate``. The test doubles in tests/support build on the same
modules. docs/SIMULATION.md describes the truth file and what the closed-form values are.
"""
