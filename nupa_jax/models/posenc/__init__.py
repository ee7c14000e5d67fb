"""Positional encodings, one module each, in a registry keyed by `config.model.posenc.name`.

Importing this package registers them all: abacus, absolute, alibi, coupled, fire, nope, rope.
See `base` for the hooks a PE may implement.
"""
from nupa_jax.models.posenc import abacus, absolute, alibi, coupled, fire, nope, rope
from nupa_jax.models.posenc.base import (Features, PositionalEncoding, apply_rotary, build,
                                         check_limits, names, options, register)

__all__ = ["Features", "PositionalEncoding", "apply_rotary", "build", "check_limits", "names",
           "options", "register", "abacus", "absolute", "alibi", "coupled", "fire", "nope",
           "rope"]
