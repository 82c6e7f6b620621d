"""Widgets: structured panels of the types in ``widgets/<type>/schema.json``, created,
read, written and sent into the chat."""
