"""rubric-judge-local: one policy call answers; an LLM judge grades the answer with a rubric."""
