"""The paper's prompts for pretrained LLMs (Appendix A.2), zero-shot and 5-shot (Appendix
`app:few_shot`), as plain text or chat messages; and reading an answer out of a reply.

A question's text is the task's `prompt(a, b)`: format prompt + task prompt, ending in `=`.
k-shot prompts put k solved examples of the same task before it, one from each of k lengths
spread evenly over the task's test lengths, shortest first: as text, one `prompt answer` line
each, then the question; as chat, a user / assistant turn each, then the question's user turn.
The examples of a task are fixed (drawn from their own seeded generators, never the test
set's) and never the question being asked.

Replies are read by `metrics.extract_answer`, as `benchmark score` reads any model's text: the
first answer after the `=` of the reply's first line holding one (`metrics.answer_text`).
"""
from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Collection

import numpy as np

from nupa_jax import tasks

SHOT_STREAM = 0x5107  # seeds shot generators apart from the test set's (testset.question_rng)
MAX_SHOT_DRAWS = 100
# Paper A.2: the system message of API models (GPT-4o), with the answer format's regex.
SYSTEM = ("You are a capable math assistant. Return your solution without any process in the "
          "format: The answer is [YOUR ANSWER]. The final answer must strictly match the "
          "format {regex}.")
ANSWER_REGEX = {"int": r'r"\d+"', "float": r'r"\d+\.\d+"', "frac": r'r"\d+/\d+"',
                "sci": r'r"\d+\.\d+e\d+"'}


@dataclasses.dataclass(frozen=True)
class Shot:
  """A solved example: the question's prompt (ending in `=`) and its answer."""
  prompt: str
  answer: str


def shot_lengths(task: tasks.Task, shots: int) -> tuple[int, ...]:
  """`shots` lengths spread evenly over the task's test lengths (fewer if it has fewer)."""
  lengths = task.test_digits
  picks = np.linspace(0, len(lengths) - 1, shots).round().astype(int) if shots else []
  return tuple(sorted({lengths[i] for i in picks}))


def examples(task_name: str, shots: int, seed: int = 0,
             exclude: Collection[tuple[str, str | None]] = ()) -> tuple[Shot, ...]:
  """The task's `shots` examples, none of whose operands (a, b) are in `exclude`."""
  task = tasks.get(task_name)
  out = []
  for length in shot_lengths(task, shots):
    rng = np.random.default_rng([SHOT_STREAM, seed, zlib.crc32(task.name.encode()), length])
    for _ in range(MAX_SHOT_DRAWS):
      a, b = task.sample(rng, length)
      if (a, b) not in exclude:
        out.append(Shot(task.prompt(a, b), task.solve(a, b)))
        break
    else:
      raise ValueError(f"no {task.name} example of {length} digits outside the excluded "
                       f"questions in {MAX_SHOT_DRAWS} draws")
  return tuple(out)


def text(question: str, shots: tuple[Shot, ...] = ()) -> str:
  """A plain-text prompt: the examples, one line each, then the question."""
  return "".join(f"{s.prompt} {s.answer}\n" for s in shots) + question


def messages(question: str, shots: tuple[Shot, ...] = (),
             system: str | None = None) -> list[dict[str, str]]:
  """Chat turns: an optional system message, a user / assistant pair per example, the question."""
  out = [{"role": "system", "content": system}] if system else []
  for s in shots:
    out += [{"role": "user", "content": s.prompt}, {"role": "assistant", "content": s.answer}]
  return out + [{"role": "user", "content": question}]


def system_message(task_name: str) -> str:
  """The paper's system message for API models, for the task's answer format."""
  return SYSTEM.format(regex=ANSWER_REGEX[tasks.get(task_name).answer_repr])

