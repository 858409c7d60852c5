"""jaxparadigm.claims (being built)."""
