"""Heartbeats, dead-node recovery and deadline enforcement, as background loops."""
