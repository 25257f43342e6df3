"""The package's version (one source: pyproject.toml reads it, ``analysis.__version__`` re-exports it)."""

__version__ = "0.1.0"
