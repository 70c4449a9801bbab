"""Keep the OpenAI Agents SDK's traces on this machine.

The SDK enables tracing by default and, as soon as ``OPENAI_API_KEY`` is set, uploads every
trace (prompts, tool arguments, model outputs) to OpenAI from a background thread. A rollout
worker serves a policy under training and often runs with no network, so an upload would leak
training data and, offline, adds retries and seconds to process exit. The integration therefore
disables the SDK's tracing when it is imported, unless the user opts in with
``OSMOSIS_OPENAI_AGENTS_TRACING=1`` (then the SDK's own configuration is left untouched, and the
user is responsible for where traces go, e.g. ``agents.set_trace_processors([...])``).
"""

from __future__ import annotations

import os

TRACING_ENV = "OSMOSIS_OPENAI_AGENTS_TRACING"
_TRUTHY = frozenset({"1", "true", "yes", "on"})


def tracing_opted_in() -> bool:
    """Whether the user asked to keep the SDK's tracing (``OSMOSIS_OPENAI_AGENTS_TRACING``)."""
    return os.environ.get(TRACING_ENV, "").strip().lower() in _TRUTHY


def disable_trace_export_unless_opted_in() -> bool:
    """Disable the SDK's tracing process-wide unless opted in; return whether it was disabled.

    ``set_tracing_disabled`` is used rather than dropping only the OpenAI exporter because a
    disabled provider also skips building spans, which is measurable CPU per rollout.
    """
    if tracing_opted_in():
        return False
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    return True
