"""``python -m opdoctor``."""

import sys

from opdoctor.cli import main

sys.exit(main())
