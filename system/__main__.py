import sys

from system.cli import main

sys.exit(main())
