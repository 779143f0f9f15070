"""Tests of the method layer (records, engine, estimators), by family in the subfolders."""
