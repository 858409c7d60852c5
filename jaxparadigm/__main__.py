"""``python -m jaxparadigm`` is the ``jaxparadigm`` command (:func:`jaxparadigm.cli.main`)."""

from jaxparadigm.cli import main

raise SystemExit(main())
