"""multiply-local-langgraph: a LangGraph agent that multiplies with a tool."""
