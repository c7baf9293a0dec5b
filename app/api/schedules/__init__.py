"""Schedules: cron definitions that fire executions (DESIGN §4, §6.3)."""
