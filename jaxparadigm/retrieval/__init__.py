"""jaxparadigm.retrieval (being built)."""
