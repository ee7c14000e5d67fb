"""The paper's tab:rfft_max_length for any tokenizer: per RF-CoT task, the longest question that
fits the context.

    python -m nupa_jax.rfcot.budget --tokenizer char|digits|PATH [--context 2048]
        [--tasks add_int,max_sci] [--samples 8]

PATH is a tokenizer.json or a directory holding one (a Hugging Face checkpoint; the paper
counted with Llama-3.1's). Per task, each digit length L is probed with a fixed-seed sample:
the first `samples` questions that `task.sample` draws from
`np.random.default_rng([zlib.crc32(task), L])` — the same questions for every run and every
tokenizer, and the ones the data pipeline probes a (task, L) cell with. A question fits when its
sample takes at most `context` positions (BOS + prompt + response tokens; encoding.py), a length
fits when all its questions do, and the reported length is the longest L such that every length
1..L fits (0: not even one digit). The table also shows the positions of that length's longest
question, those of the next length (the first that does not fit), and the paper's value.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import zlib
from collections.abc import Sequence

import numpy as np

from nupa_jax import tasks as tasks_lib
from nupa_jax.rfcot import cot
from nupa_jax.rfcot.encoding import Encoder

DEFAULT_SAMPLES = 8


def questions(task: str, length: int, samples: int = DEFAULT_SAMPLES) -> list[tuple[str, str | None]]:
  """The fixed-seed questions that probe `task` at `length` digits."""
  t = tasks_lib.get(task)
  rng = np.random.default_rng([zlib.crc32(t.name.encode()), length])
  return [t.sample(rng, length) for _ in range(samples)]


def longest(encoder: Encoder, task: str, length: int, samples: int = DEFAULT_SAMPLES) -> int:
  """Positions taken by the longest probe question of `task` at `length` digits."""
  t = tasks_lib.get(task)
  return max(encoder.used_positions(encoder.encode(t.name, a, b, t.solve(a, b))[0])
             for a, b in questions(task, length, samples))


@dataclasses.dataclass(frozen=True)
class Fit:
  """The longest fitting length of a task and the positions around it."""
  task: str
  digits: int  # longest L with every length 1..L fitting; 0 if none
  positions: int | None  # longest probe question at `digits`
  next_positions: int | None  # longest probe question at `digits + 1` (None past the task's max)
  paper: int | None  # tab:rfft_max_length (None: not in the table)


def fit(encoder: Encoder, task: str, samples: int = DEFAULT_SAMPLES) -> Fit:
  """Tries lengths 1, 2, ... up to the task's maximum; the first that does not fit ends it."""
  t = tasks_lib.get(task)
  previous = None
  for length in range(1, t.max_digits + 1):
    used = longest(encoder, task, length, samples)
    if used > encoder.context:
      return Fit(t.name, length - 1, previous, used, cot.PAPER_MAX_DIGITS.get(t.name))
    previous = used
  return Fit(t.name, t.max_digits, previous, None, cot.PAPER_MAX_DIGITS.get(t.name))


def table(encoder: Encoder, task_names: Sequence[str], samples: int = DEFAULT_SAMPLES) -> list[Fit]:
  return [fit(encoder, task, samples) for task in task_names]


def format_table(fits: Sequence[Fit], encoder: Encoder, samples: int) -> str:
  dash = lambda v: "-" if v is None else str(v)
  lines = [f"RF-CoT context budget: tokenizer {encoder.tokenizer_name} (vocab "
           f"{encoder.vocab_size}), context {encoder.context} positions, longest of {samples} "
           "fixed-seed questions per length",
           f"{'task':22s} {'digits':>6s} {'positions':>9s} {'next':>6s} {'paper':>6s}"]
  for f in fits:
    lines.append(f"{f.task:22s} {f.digits:6d} {dash(f.positions):>9s} "
                 f"{dash(f.next_positions):>6s} {dash(f.paper):>6s}")
  return "\n".join(lines)


def _task_list(text: str | None) -> list[str]:
  if not text:
    return list(cot.TABLE_TASKS)
  names = [tasks_lib.get(n.strip()).name for n in text.split(",") if n.strip()]
  for name in names:
    cot.rule_name(name)  # raises for a task without a rule
  return names


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(prog="python -m nupa_jax.rfcot.budget", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--tokenizer", required=True,
                      help="char, digits, or a tokenizer.json (or a directory holding one)")
  parser.add_argument("--context", type=int, default=2048, help="positions a sample may take")
  parser.add_argument("--tasks", help="comma-separated tasks (default: the paper's table; "
                                      f"with a rule: {', '.join(cot.names())})")
  parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES,
                      help="fixed-seed questions per length")
  args = parser.parse_args(argv)
  try:
    encoder = Encoder(args.tokenizer, args.context)
    task_names = _task_list(args.tasks)
  except (ValueError, FileNotFoundError, ImportError) as e:
    parser.error(str(e))
  if args.samples < 1:
    parser.error("--samples must be >= 1")
  print(format_table(table(encoder, task_names, args.samples), encoder, args.samples))
  sys.stdout.flush()


if __name__ == "__main__":
  main()
