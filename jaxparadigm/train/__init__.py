"""jaxparadigm.train (being built)."""
