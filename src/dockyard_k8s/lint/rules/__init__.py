"""Rule families, one module each. Every module exposes ``RULES``: a tuple of :class:`Rule`.

The registry (``lint/registry.py``) concatenates them in this order, which is also the
order of ``--list-rules`` and of the table in docs/lint.md.
"""
