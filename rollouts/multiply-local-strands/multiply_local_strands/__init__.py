"""multiply-local-strands: a Strands agent that multiplies with a tool."""
