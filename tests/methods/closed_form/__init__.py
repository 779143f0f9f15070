"""Closed-form (eigen) methods and their kernel forms."""
