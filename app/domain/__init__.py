"""Pure Python core: states, value objects, retry policy, signing, text rules."""
