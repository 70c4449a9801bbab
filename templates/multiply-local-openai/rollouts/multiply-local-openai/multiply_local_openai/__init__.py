"""multiply-local-openai: an OpenAI Agents SDK agent that multiplies with a tool."""
