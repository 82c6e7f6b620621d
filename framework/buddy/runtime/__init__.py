"""The runtime: turns a compiled :class:`~buddy.compile.blueprint.Blueprint` into a
companion that talks — tools and hooks, the agent loop, conversations, the buddy server."""
