"""``python -m jaxparadigm`` is the ``jaxparadigm`` command."""

from jaxparadigm.cli import main

raise SystemExit(main())
