"""The retrieval evaluation's public names, kept importable from here (C1.1, C1.2).

Each lives in the module named for its job:

* :mod:`~jaxparadigm.app.retrieval_task` -- ``run_experiment(cfg)`` (task ``retrieval``), ``METHODS``
* :mod:`~jaxparadigm.retrieval.passage_index` -- ``passage_index`` (with the on-disk cache)
* :mod:`~jaxparadigm.claims.evidence.seed_example` -- ``seed_example`` (the article's Chinese example)
* :mod:`~jaxparadigm.claims.evidence.dot_vs_cosine` -- ``dot_vs_cosine`` (C1.2's measurement)
* :mod:`~jaxparadigm.app.retrieval_plots` / :mod:`~jaxparadigm.app.retrieval_report` --
  the report's chart and Markdown
* :mod:`~jaxparadigm.app.search_text` -- ``format_search`` (what ``jaxparadigm search`` prints)
"""

from jaxparadigm.app.retrieval_task import METHODS, run_experiment
from jaxparadigm.app.search_text import format_search
from jaxparadigm.claims.evidence.dot_vs_cosine import dot_vs_cosine
from jaxparadigm.claims.evidence.seed_example import seed_example
from jaxparadigm.retrieval.passage_index import passage_index

__all__ = [
    "run_experiment",
    "format_search",
    "passage_index",
    "seed_example",
    "dot_vs_cosine",
    "METHODS",
]
