"""multiply-local-pydantic-ai: a Pydantic AI agent that multiplies with a tool."""
