"""Rendering: the only place besides cli_app.py that imports rich."""
