"""The results-block types (Block, InferenceRow, ResultsBlock) and the adapter decorator indexed_as, defined
in analysis.estimators.registration so that a statistic's module can register itself; imported from here by
the results layer and its readers."""

from __future__ import annotations

from analysis.estimators.registration import Block, InferenceRow, RegistrationError, ResultsBlock, indexed_as

__all__ = ["Block", "InferenceRow", "RegistrationError", "ResultsBlock", "indexed_as"]
