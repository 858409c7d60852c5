"""The HTTP search service: handler, request checks, request batching, the search page (C5.2)."""
