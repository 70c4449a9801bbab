"""multiply-harbor-strands: a Strands agent that multiplies with a tool, inside a Harbor trial."""
