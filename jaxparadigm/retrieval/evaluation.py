"""The retrieval evaluation's public names, kept importable from here (C1.1, C1.2).

Each lives in the module named for its job:

* :mod:`~jaxparadigm.retrieval.experiment` -- ``run_experiment(cfg)`` (task ``retrieval``), ``METHODS``
* :mod:`~jaxparadigm.retrieval.passage_index` -- ``passage_index`` (with the on-disk cache)
* :mod:`~jaxparadigm.retrieval.seed_example` -- ``seed_example`` (the article's Chinese example)
* :mod:`~jaxparadigm.retrieval.dot_vs_cosine` -- ``dot_vs_cosine`` (C1.2's measurement)
* :mod:`~jaxparadigm.retrieval.metrics_plot` / :mod:`~jaxparadigm.retrieval.report_markdown` --
  the report's chart and Markdown
* :mod:`~jaxparadigm.retrieval.search_text` -- ``format_search`` (what ``jaxparadigm search`` prints)
"""

from jaxparadigm.retrieval.dot_vs_cosine import dot_vs_cosine
from jaxparadigm.retrieval.experiment import METHODS, run_experiment
from jaxparadigm.retrieval.passage_index import passage_index
from jaxparadigm.retrieval.search_text import format_search
from jaxparadigm.retrieval.seed_example import seed_example

__all__ = [
    "run_experiment",
    "format_search",
    "passage_index",
    "seed_example",
    "dot_vs_cosine",
    "METHODS",
]
