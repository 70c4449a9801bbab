"""Talking to the osmosis platform: where it is, the stored token, the HTTP client, secrets,
and submitting eval and training runs. The endpoints are documented in ``docs/platform-api.md``."""
