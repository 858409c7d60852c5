"""jaxparadigm.app: the application wing: the CLI, the tasks of ``jaxparadigm run``, reports, plots.

Modules: ``cli`` (the real CLI; ``jaxparadigm.cli`` re-exports it), ``tasks`` (the one table
task name -> function), ``train_task`` (tasks train / mixed_precision / overflow and their
Markdown reports), ``train_plots`` (matplotlib figures of a run). Above the libraries and
:mod:`jaxparadigm.build`; no library imports it.
"""
