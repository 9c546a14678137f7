"""``python -m kclient.cli``: the same as the ``kclient`` command."""

import sys

from . import main

sys.exit(main())
