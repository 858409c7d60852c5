"""Flax NNX models: MLP classifier, decoder-only transformer LM, MiniLM/BERT sentence encoder.

Each model lives in its own module; import from there (``jaxparadigm.models.mlp`` etc.) or from
here.
"""

from jaxparadigm.models.bert import (  # noqa: F401
    BertConfig,
    BertEncoder,
    l2_normalize,
    load_bert,
    mean_pool,
)
from jaxparadigm.models.mlp import MLP  # noqa: F401
from jaxparadigm.models.transformer import TransformerLM  # noqa: F401
