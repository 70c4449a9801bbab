"""Core's private wing: plumbing with one owner each (redaction, backoff, ASGI helpers, loopback
serving, child-process framing). Internal: sibling distributions reach what they need through
:mod:`osmosis_ai.rollout.integrations.spi`."""
