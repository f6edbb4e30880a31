"""nbval runs these notebooks with nobody at them: ``AHP_LAB_UNATTENDED=1`` tells a notebook to
answer from code what it would otherwise leave for a person's click (see ``notebooks/README.md``).
The kernels nbval starts inherit this process's environment."""

import os

os.environ.setdefault("AHP_LAB_UNATTENDED", "1")
