"""Outbound HTTP to handlers: the signed request, one pooled session, response → outcome."""
