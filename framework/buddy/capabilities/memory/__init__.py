"""Memory: what a buddy keeps about a conversation (key → text), written by declarative
``uses: memory.*`` tools and by code through ``conversation.memory``. It offers no
platform tool of its own; its limits and rules are in :mod:`buddy.capabilities.memory.limits`."""
