"""The package version (ground floor: the proof cache keys its entries by it)."""

__version__ = "0.1.0"
