"""The token vocabulary and the ways of cutting digits into number tokens (paper §3.1, A.4.1).

Tokenizers are a registry keyed by config name; each decides only where a part's digits are
cut, as chunk lengths in natural (most significant first) order. The encoder applies the cut
before a format reverses a part, so reversing changes the order tokens are written in, never
which digits share a token:

- `{"name": "digits", "k": 1|2|3, "align": "right"|"left"}`: chunks of k digits. `right` cuts
  integer-like parts from the units digit, so equal powers of ten sit at equal places in their
  tokens (the aligned tokenizer of paper Fig. 2d); `left` cuts them from the front like greedy
  BPE tokenizers (Fig. 2c). Decimal parts are cut from the front (the decimal point) either way.
  Only the chunk at the far end can be shorter than k.
- `{"name": "random", "max_k": 2|3}`: chunk lengths drawn uniformly from 1..max_k, front to back,
  the last one clipped to what is left (subword regularisation, paper A.4.2). Cuts come from the
  sample's RNG; without one (evaluation prompts) they come from a fixed stream seeded by a CRC-32
  of the question (`Draws.seeded`): a question is always cut the same way, on every machine, and
  its cut looks like the training data's.

The vocabulary depends on the tokenizer only through its longest chunk: PAD=0, BOS, EOS, `=`,
the part separators `.` `/` `e`, every digit string of 1..max_chunk digits ("0", "00" and "000"
are distinct tokens), HINTS_PER_KIND index hints per part kind, then one token per task kind in
the registry's fixed order (new kinds only append).
"""
import functools
import itertools
import random
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from nupa_jax import numbers
from nupa_jax.text import formats

SPECIALS = ("[PAD]", "[BOS]", "[EOS]", "=", ".", "/", "e")
PAD, BOS, EOS, EQ = range(4)
HINT_KINDS = tuple(numbers.PART_ALIGN)  # one hint alphabet per part kind
HINTS_PER_KIND = 128  # hint indices wrap around beyond this

# A cutter maps (number of digits, part kind) to chunk lengths in natural order.
Cutter = Callable[[int, str], Sequence[int]]


class Vocab:
  """Token strings and ids; see the module docstring for the layout."""

  def __init__(self, max_chunk: int, task_kinds: Sequence[str]):
    self.tokens: list[str] = list(SPECIALS)
    self.separator_ids = {sep: self.tokens.index(sep) for sep in "./e"}
    self.first_number = len(self.tokens)
    for length in range(1, max_chunk + 1):
      self.tokens += ["".join(digits) for digits in itertools.product("0123456789", repeat=length)]
    self.first_hint = len(self.tokens)
    self.tokens += [f"{kind}:{i}" for kind in HINT_KINDS for i in range(HINTS_PER_KIND)]
    self.first_task = len(self.tokens)
    self.tokens += [f"<{kind}>" for kind in task_kinds]
    self.ids = {token: i for i, token in enumerate(self.tokens)}
    self.number_ids = {t: self.ids[t] for t in self.tokens[self.first_number:self.first_hint]}

  def __len__(self) -> int:
    return len(self.tokens)

  def hint_base(self, kind: str) -> int:
    """Id of hint 0 of part kind `kind`."""
    return self.first_hint + HINT_KINDS.index(kind) * HINTS_PER_KIND

  def task_id(self, kind: str) -> int:
    return self.ids[f"<{kind}>"]


@functools.cache
def _aligned(n: int, k: int, from_end: bool) -> tuple[int, ...]:
  """Lengths of k-digit chunks of n digits; the short chunk goes first when cut from the end."""
  head, rest = divmod(n, k)
  lengths = (k,) * head
  if not rest:
    return lengths
  return (rest,) + lengths if from_end else lengths + (rest,)


_TOKENIZERS: dict[str, type] = {}


def register(name: str):
  """Class decorator: makes a tokenizer available under config name `name`."""
  def wrap(cls):
    _TOKENIZERS[name] = cls
    return cls
  return wrap


class Draws:
  """Uniform small integers from a random byte stream, 64 bytes per call to the generator.

  Numpy Generator methods cost microseconds per call, too much per chunk: bytes come in
  blocks and are rejection-sampled, so every draw is exactly uniform.
  """

  def __init__(self, source: Callable[[], bytes]):
    self._source = source  # returns the next block of random bytes
    self._bytes = b""
    self._next = 0

  @classmethod
  def from_generator(cls, rng: np.random.Generator) -> "Draws":
    bits = rng.bit_generator
    return cls(lambda: bits.random_raw(8).tobytes())

  @classmethod
  def seeded(cls, key: str) -> "Draws":
    """A fixed stream for `key` (a CRC-32 seed: stable across processes and runs)."""
    stream = random.Random(zlib.crc32(key.encode()))
    return cls(lambda: stream.randbytes(64))

  def below(self, m: int) -> int:
    """A uniform integer in [0, m), 1 <= m <= 256."""
    limit = 256 - 256 % m
    while True:
      if self._next == len(self._bytes):
        self._bytes, self._next = self._source(), 0
      byte = self._bytes[self._next]
      self._next += 1
      if byte < limit:
        return byte % m


@register("digits")
class AlignedDigits:
  """Chunks of k digits, integer-like parts cut from the units (`right`) or the front (`left`)."""
  OPTIONS = {"k": (1, 2, 3), "align": ("right", "left")}
  DEFAULTS = {"k": 1, "align": "right"}
  random = False

  def __init__(self, k: int, align: str):
    self.max_chunk = k
    self._from_units = align == "right"

  def cutter(self, draws: Draws | None) -> Cutter:
    del draws  # the cut is fixed
    k, from_units = self.max_chunk, self._from_units
    return lambda n, kind: _aligned(n, k, from_units and kind in formats.INT_LIKE)


@register("random")
class RandomDigits:
  """Chunks of random length 1..max_k, drawn front to back."""
  OPTIONS = {"max_k": (2, 3)}
  DEFAULTS = {}
  random = True

  def __init__(self, max_k: int):
    self.max_chunk = max_k

  def cutter(self, draws: Draws) -> Cutter:
    max_k = self.max_chunk

    def cut(n: int, kind: str) -> list[int]:
      del kind  # every part is cut the same way
      lengths = []
      while n > 0:
        length = min(draws.below(max_k) + 1, n)
        lengths.append(length)
        n -= length
      return lengths
    return cut


def names() -> list[str]:
  """The registered tokenizer names."""
  return sorted(_TOKENIZERS)


def make(config: Mapping[str, Any]):
  """The tokenizer for `{"name": ..., **options}`; ValueError names what is supported."""
  config = dict(config)
  name = config.pop("name", None)
  if name not in _TOKENIZERS:
    raise ValueError(f"unknown tokenizer {name!r}; known: {', '.join(sorted(_TOKENIZERS))}")
  cls = _TOKENIZERS[name]
  unknown = sorted(set(config) - set(cls.OPTIONS))
  if unknown:
    raise ValueError(f"unknown option(s) {', '.join(map(repr, unknown))} for tokenizer {name!r}; "
                     f"known: {', '.join(cls.OPTIONS)}")
  options = {**cls.DEFAULTS, **config}
  for option, allowed in cls.OPTIONS.items():
    if option not in options:
      raise ValueError(f"tokenizer {name!r} needs {option!r}, one of {list(allowed)}")
    value = options[option]
    if isinstance(value, bool) or value not in allowed:
      raise ValueError(f"tokenizer {name!r}: {option}={value!r} is not supported; "
                       f"supported: {', '.join(map(str, allowed))}")
  return cls(**options)
