"""The package version (one place; read by the package and by saved files)."""

__version__ = "0.1.0"
