"""What Jobwire sends to handlers, described as the OpenAPI document's `webhooks`."""
