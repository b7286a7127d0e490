import sys

from tilecheck.cli import main

sys.exit(main())
