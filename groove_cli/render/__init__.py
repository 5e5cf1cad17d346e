"""Rendering: the only place besides cli.py that imports rich."""
