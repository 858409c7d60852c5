"""Keyword ranking: BM25 and the seed's substring and token-overlap baselines (C1.1)."""
