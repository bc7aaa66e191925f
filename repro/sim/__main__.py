import sys

from repro.sim.cli import main

sys.exit(main())
