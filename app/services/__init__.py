"""Use cases and their transaction boundaries."""
