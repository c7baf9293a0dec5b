"""The pruner loop: deleting finished executions once their retention has passed, on every node."""
