"""FAKE ``appworld.apps.admin.models``: only ``MainUserMunch``, which shipped solutions take."""

from munch import Munch


class MainUserMunch(Munch):
    @classmethod
    def from_main_user(cls, main_user):
        return cls(main_user.to_dict())
