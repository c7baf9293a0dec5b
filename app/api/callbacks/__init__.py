"""Callbacks from handlers (DESIGN §5): complete, progress, heartbeat, logs, steps. They take the
execution's callback token only, never API keys."""
