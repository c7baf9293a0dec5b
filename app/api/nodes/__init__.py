"""Nodes: the live Jobwire processes sharing the database."""
