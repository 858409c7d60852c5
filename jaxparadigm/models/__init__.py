"""jaxparadigm.models (being built)."""
