"""multiply-local-adk: a Google ADK agent that multiplies with a tool."""
