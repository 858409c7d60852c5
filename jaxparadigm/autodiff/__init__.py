"""jaxparadigm.autodiff (being built)."""
