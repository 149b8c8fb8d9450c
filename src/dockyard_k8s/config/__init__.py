"""Configuration: recipe + infra files and flags -> one resolved, typed run (no rendering).

    infra_schema.py  the infra spec as data: the one source of the docs, the JSON Schema,
                     the shipped defaults and the types
    infra_types.py   TypedDicts generated from it (typegen.py), so mypy checks infra["..."]
    model.py         the resolved RunConfig, and where each infra value came from
    loader.py        files and layers -> RunConfig, every problem located
    layering.py      Helm-style layering of YAML files (``defaults:`` parents), for every spec
    recipes.py       a recipe's Hydra-style ``defaults:`` list composed into one mapping
    overrides.py     --set and Hydra-style recipe overrides
    schema.py        the strict JSON-Schema-subset checker and the defaults
    rules.py         run-level rules one key's schema cannot say, once every layer is merged
    platforms.py     platform profile layers and their rules
    network.py       address space the sandbox never reaches; allowed egress ranges checked
    kueue.py         ``infra.kueue`` rules (Kueue's webhook) at the key
    serve_schema.py  the ``serve:`` section's schema; serve.py resolves a serve spec (ServeConfig)
    yamlio.py        strict YAML 1.2 reading with locations
    docs.py          JSON Schema and Markdown forms of the schema
"""
