"""The scheduler loop: cron firing on every node."""
