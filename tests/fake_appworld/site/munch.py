"""FAKE ``munch`` for the tests' fake AppWorld interpreter: just ``Munch`` and ``munchify``."""


class Munch(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


def munchify(value):
    if isinstance(value, dict):
        return Munch({k: munchify(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return type(value)(munchify(v) for v in value)
    return value
