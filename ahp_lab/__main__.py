"""``python -m ahp_lab``: the ``ahp-lab`` command (``serve``, ...), for when scripts are not on PATH."""

from .cli import main

raise SystemExit(main())
