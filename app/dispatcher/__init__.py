"""The claim loop and the executor: bounded in-flight HTTP calls, batched outcome writes."""
