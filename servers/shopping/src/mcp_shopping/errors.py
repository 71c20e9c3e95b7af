"""Shopping errors, each written for the model.

ShoppingError (meshkit ModelError)
 ├── InvalidRequest    an empty name, a list name or quantity out of range, a malformed payload
 ├── NoMatch           no item on the list, or in the order history, matches the words given
 ├── Ambiguous         several items match: the message lists them so the model can ask
 └── NotOnList         the item to remove left the list after it was proposed
ApprovalRefused (meshkit) a confirm tool without a valid approval token for exactly this change
"""

from __future__ import annotations

from meshkit.errors import ModelError


class ShoppingError(ModelError):
    pass


class InvalidRequest(ShoppingError):
    pass


class NoMatch(ShoppingError):
    pass


class Ambiguous(ShoppingError):
    pass


class NotOnList(ShoppingError):
    pass
