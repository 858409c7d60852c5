"""jaxparadigm.tensor (being built)."""
