"""Executions: one attempt-carrying run of a job; list, show, logs, cancel, retry."""
