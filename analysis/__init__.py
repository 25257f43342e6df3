"""Analysis, audit and runner for Partitioned versus Undivided Compaction Carriers."""
__version__ = "0.1.0"
