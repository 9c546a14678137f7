"""``python -m kclient.broker --log-dir DIR --port P ...`` runs one mini-broker."""

import sys

from .server import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
