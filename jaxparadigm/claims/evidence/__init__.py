"""Code that exists only to produce a claim's evidence or a demo: the seed example, C1.2's dot-vs-cosine
check, the labelled pydoc queries, the C5 load generator and readiness measurement."""
