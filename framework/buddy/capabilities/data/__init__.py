"""User data: the datasets a buddy declares (``data:``), queries, asks consent for with a
card (which ends the turn), and the one-time results of location and calendar cards.
The catalogue of datasets is :mod:`buddy.capabilities.data.datasets`."""
