"""multiply-local-plain: a hand-written agent loop (openai client, no framework) with a tool."""
