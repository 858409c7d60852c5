"""jaxparadigm.autodiff.rules: every primitive's gradient rules, one family per module (claim C3.2).

A family's VJP rules and JVP rules sit side by side: ``<family>.py`` (reverse mode, plus any JVP
rule written next to its VJP) and ``<family>_jvp.py`` (forward mode). ``tangents.py`` and
``scatter_dims.py`` hold helpers the rules share.
"""

__all__: list[str] = []
