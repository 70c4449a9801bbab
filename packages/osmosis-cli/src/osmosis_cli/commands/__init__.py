"""Typer command modules. Each is a thin shell over a library module and imports only Typer
at module level; everything heavier is imported inside the command function."""
