"""jaxparadigm.optim (being built)."""
