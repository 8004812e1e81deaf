"""The review: who owns what in a stack, and what a change asks of whom, from the stack's config alone.

``ownership`` is the ownership review (``lakehouse review``; its arguments: ``arguments``); ``change``
the change review by owner (a pull request's config diff and preview, approvals); ``grants`` who may read, write
and manage each namespace, laid out from the one decision of the model.
"""
