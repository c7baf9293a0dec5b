"""Jobs: enqueue one (POST /v1/jobs) or a batch (POST /v1/jobs/batch); each becomes an execution."""
