"""Shared fixtures: osmosis_ai.testing's pytest plugin (a temporary OSMOSIS_HOME and the scripted
multiply policy on 127.0.0.1 as ``multiply_policy``)."""

pytest_plugins = ["osmosis_ai.testing.pytest_plugin"]
