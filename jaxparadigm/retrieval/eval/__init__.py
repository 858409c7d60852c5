"""Relevance evaluation: ranking metrics and the pydoc corpus (C1.1)."""
