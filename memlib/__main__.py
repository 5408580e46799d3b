import sys

from memlib.cli import main

sys.exit(main())
