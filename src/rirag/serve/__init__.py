"""``rirag serve``: the rulebook as tools for agents (Model Context Protocol): the tools in :mod:`.tools`, the server
in :mod:`.server` (the ``mcp`` SDK, imported only there)."""
