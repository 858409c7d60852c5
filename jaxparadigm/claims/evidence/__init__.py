"""Code that exists only to produce a claim's evidence or a demo (C1.1-C5.2): the seed example,
C1.2's dot-vs-cosine check, the labelled pydoc queries, the C5 load generator and readiness
measurement, C4.3's overflow evidence (the PyTorch side and its table) and C3.3's graph growth per
derivative order."""
