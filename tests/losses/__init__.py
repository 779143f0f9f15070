"""The pure losses."""
