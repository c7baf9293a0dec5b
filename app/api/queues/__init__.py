"""Queues: their depth by state, pause and resume."""
