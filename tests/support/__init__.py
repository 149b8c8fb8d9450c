"""Helpers shared by tests of every directory (``tests/`` is on ``sys.path`` through
``tests/conftest.py``): ``from support.netpol import Network``."""
