"""Compile a validated manifest into a frozen :class:`Blueprint` the runtime consumes."""
