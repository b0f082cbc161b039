"""Test helpers for hermes-host and for engine authors (fake Anthropic server, secrets corpus)."""
