"""The companion engine: what a buddy remembers, feels and knows each turn.

The memory, character and lore capabilities declare sections (``memory:``,
``character:``, ``lore:``), their compiled forms and pure functions (the ledger's
policies, the mood's dynamics, the lore scan); this folder runs them for a conversation,
as one conversation layer (``Capability.layer``) they share:

``engine.py``
    :class:`~buddy.capabilities.companion.engine.Companion`: the layer's turn (before,
    after), its extraction jobs, the reconcile, through the conversation's own ``memory``
    and ``proactive`` parts.
``storage.py``
    Reading a conversation's ``auto:`` entries back — only when the event's memory
    revision says someone else wrote — and saving what a message changed in one batch.
``mind.py``
    :class:`~buddy.capabilities.companion.mind.Mind`, what the engine holds of one
    conversation, and how it is kept under the ``auto:`` keys of the platform's memory
    (pure functions: entries → mind, mind → entries).
``context.py``
    What a turn's prompt gets: the card, the mood, the lore, a fact to ask about or the
    reconcile, within the budget (pure).
``extraction.py``
    One message's facts and appraisal: patterns first, the extractor model once if need
    be, applied to the mind.
``queue.py``
    Extraction off the reply path: per conversation in order, one at a time.
``measure.py``
    How well a buddy's relation and appraisal patterns read a labelled file of messages
    (``buddy patterns``).
"""
