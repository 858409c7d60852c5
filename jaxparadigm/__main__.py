"""``python -m jaxparadigm`` is the ``jaxparadigm`` command (:func:`jaxparadigm.console.main`)."""

from jaxparadigm.console import main

raise SystemExit(main())
