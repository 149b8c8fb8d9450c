import sys

from dockyard_k8s.cli import main

sys.exit(main())
