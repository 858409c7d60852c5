"""jaxparadigm.app: the application wing: the CLI, the tasks of ``jaxparadigm run``, reports, plots.

Modules: ``cli`` (the real CLI; ``jaxparadigm.cli`` re-exports it), ``tasks`` (the one table task
name -> function), ``train_task`` (tasks train / mixed_precision / overflow and their Markdown
reports), ``train_launch`` (``--num-processes``), ``cpu_devices`` (``--cpu-devices``: the CPU device
count chosen before JAX starts), ``train_plots`` (matplotlib figures of a run), ``retrieval_task`` /
``retrieval_report`` / ``retrieval_plots`` (the retrieval task and its report),
``search_command_output`` / ``index_command_output`` (what ``search`` and ``index`` print). Above
the libraries, :mod:`jaxparadigm.build` and :mod:`jaxparadigm.claims`; no library imports it.
"""
