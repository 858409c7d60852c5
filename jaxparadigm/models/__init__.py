"""Flax NNX models: MLP classifier, decoder-only transformer LM, MiniLM/BERT sentence encoder.

Each model lives in its own module; import from there (``jaxparadigm.models.mlp`` etc.) or from here.
"""
