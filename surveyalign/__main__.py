"""``python -m surveyalign`` runs the command line."""

import sys

from surveyalign.cli import main

sys.exit(main())
