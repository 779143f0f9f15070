"""The ordinal learners."""
