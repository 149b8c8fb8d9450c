"""Configuration: recipe + infra files and flags -> one resolved, typed run (no rendering).

    infra_schema.py  the infra spec as data: the one source of the docs, the JSON Schema,
                     the shipped defaults and the types
    infra_types.py   TypedDicts generated from it (typegen.py), so mypy checks infra["..."]
    model.py         the resolved RunConfig, and where each infra value came from
    loader.py        files and layers -> RunConfig, every problem located
    overrides.py     --set and Hydra-style recipe overrides
    schema.py        the strict JSON-Schema-subset checker and the defaults
    platforms.py     platform profile layers and their rules
    yamlio.py        strict YAML 1.2 reading with locations
    docs.py          JSON Schema and Markdown forms of the schema
"""
