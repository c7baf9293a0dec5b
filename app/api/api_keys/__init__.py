"""API keys kept in the database: create (shown once), list, revoke."""
