"""Code that exists only to produce a claim's evidence or a demo (C1.1-C5.2)."""
