"""Operator tools behind the ``oam`` command: schema administration, API keys, portable
export/import, conversation import and store statistics. Built on the public client API."""
