"""Ranking a query's hits: rank fusion, hybrid search, excerpts, the search pipeline (C1.1)."""
