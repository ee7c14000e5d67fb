"""The evaluation's questions and their generation batches.

The questions are the benchmark's (`benchmark.testset`, regenerated in memory from the
benchmark seed `config.data.test_seed` — the same set the training data excludes — or read
from a built `config.eval.test_dir`): `config.eval.per_length` per task and test length, for
the test lengths inside `config.eval.digits` (training may stop at 8 digits, evaluation goes
to 20), or inside a task's own range of `config.eval.task_digits`. Past the benchmark (length
generalization), `config.eval.beyond_digits` adds each task's questions at the listed lengths
above its tier `max_digits`, regenerated with the same seeding
(`testset.questions`, also with a `test_dir`); they exist only for integer and float tasks
(`testset.max_length`: others raise).

Shapes: prompts are grouped by task and length into batches of `config.eval.batch_size` rows
(padded with copies); each batch's prompt width and output buffer come from few sizes
(`program_sizes`), so that a whole evaluation compiles only a few generation programs:
compiling one costs more than decoding dozens of batches with it.
Generation stops at the batch's longest true answer + `MARGIN` tokens: a longer prediction is
scored as cut there, so a question's dlength counts at most MARGIN tokens past that answer (a
batch holds one task and length, so about MARGIN past its own): an answer that runs on further
is scored as if it stopped there, and dlength means understate such runs.
"""
from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from nupa_jax import tasks as tasks_lib
from nupa_jax.benchmark import files as test_files
from nupa_jax.benchmark import testset
from nupa_jax.evaluation import generate as generate_lib
from nupa_jax.evaluation import settings as eval_settings
from nupa_jax.text import SampleEncoder

MARGIN = 8  # generated tokens allowed beyond the batch's longest true answer (+ EOS)


@dataclasses.dataclass(frozen=True)
class Batch:
  """One generation batch: prompts of one task, their questions, and the static sizes."""
  task: str
  questions: tuple[testset.Question, ...]
  prompts: np.ndarray  # int32[rows, width], right-padded; rows beyond the questions repeat
  lengths: np.ndarray  # int32[rows]
  sample_lengths: np.ndarray  # int32[rows]: tokens of each row's whole sample fed to the model
  # int32[rows]: the same for a sample whose answer is the longest true answer among the task's
  # evaluated questions of the row's length (`positions.RULES["training_longest"]`)
  longest_sample_lengths: np.ndarray
  max_new_tokens: int
  buffer: int  # generate's output buffer (>= max_new_tokens): with the width, a program size
  features: dict[str, np.ndarray]  # digit_index / significance of the prompts, if the PE reads them
  # Largest position input of the batch's full samples (prompt and true answer; EOS is only a
  # target): "positions" and each feature read, for the PE's limits.
  extents: dict[str, int] = dataclasses.field(default_factory=dict)

  @property
  def program(self) -> tuple[int, int, int]:
    """What decides the batch's compiled generation program: rows, prompt width, buffer."""
    return (*self.prompts.shape, self.buffer)


def eval_tasks(config) -> list[str]:
  """Canonical names of the evaluated tasks: `config.eval.tasks`, default the training tasks."""
  if config.eval.tasks:
    return testset.resolve_tasks(list(config.eval.tasks))
  if "all" in config.data.tasks:
    return testset.resolve_tasks(None)
  return testset.resolve_tasks(list(config.data.tasks))


def beyond_lengths(task: str, beyond: Sequence[int]) -> list[int]:
  """The lengths of `beyond` past the task's tier, sorted; ValueError for a task that has no
  questions there (`testset.max_length`)."""
  spec = tasks_lib.get(task)
  out = sorted({int(d) for d in beyond if int(d) > spec.max_digits})
  for length in out:
    try:
      testset.check_length(spec.name, length)
    except ValueError as e:
      raise ValueError(f"config.eval.beyond_digits: {e}; leave {spec.name} out of "
                       "config.eval.tasks or drop its longer lengths") from None
  return out


def load_questions(task_names: Sequence[str], digits: Sequence[int], per_length: int,
                   seed: int, test_dir: str = "", beyond: Sequence[int] = (),
                   task_digits: Mapping[str, Sequence[int]] | None = None
                   ) -> dict[str, list[testset.Question]]:
  """{task: questions} ordered by length: the test lengths in `digits` (or the task's range in
  `task_digits`) from `test_dir` if given, else regenerated; then the `beyond` lengths past
  each task's tier, regenerated."""
  wanted = {t: set(eval_settings.task_lengths(t, digits, task_digits)) for t in task_names}
  longer = {t: beyond_lengths(t, beyond) for t in task_names}
  out = {t: [] for t in task_names}
  if test_dir:
    counts = collections.Counter()
    for q in test_files.read_test_set(test_dir):
      if q.task in wanted and q.digits in wanted[q.task] and counts[q.task, q.digits] < per_length:
        counts[q.task, q.digits] += 1
        out[q.task].append(q)
    for task in out:
      out[task].sort(key=lambda q: q.digits)
  else:
    for task in task_names:
      for length in sorted(wanted[task]):
        out[task].extend(testset.questions(task, length, seed, per_length))
  for task in task_names:
    for length in longer[task]:
      out[task].extend(testset.questions(task, length, seed, per_length))
  return out


def batch_rows(batch_size: int, questions: dict[str, list[testset.Question]],
               divisor: int) -> int:
  """Rows of a generation batch: `batch_size`, but no more than the most questions of one task
  (a batch holds one task's), rounded up to a multiple of `divisor` (the mesh's batch axes)."""
  rows = min(batch_size, max(map(len, questions.values()), default=1))
  return -(-rows // divisor) * divisor


def make_batches(encoder: SampleEncoder, questions: dict[str, list[testset.Question]], rows: int,
                 feature_names: Iterable[str] = (),
                 skipped: collections.Counter | None = None) -> list[Batch]:
  """Encodes prompts (and answers, for their lengths) into fixed-size generation batches.

  An encoder with a context budget (RF-CoT's `fits(tokens)`) cannot hold every question: one
  whose whole sample does not fit is left out and counted in `skipped[task]`.
  """
  feature_names = sorted(feature_names)
  out = []
  for task, qs in questions.items():
    encoded = []  # (question, prompt, answer length, extents) of the questions that fit
    for q in qs:
      prompt, _ = encoder.encode(task, q.a, q.b, None)
      full, _ = encoder.encode(task, q.a, q.b, q.answer)
      if not encoder.fits(full):
        if skipped is not None:
          skipped[task] += 1
        continue
      extents = {"positions": len(full) - 2}  # the last input token; EOS is only a target
      if feature_names:
        full_features = encoder.positions(task, full)
        extents.update({name: int(full_features[name][:-1].max()) for name in feature_names})
      encoded.append((q, prompt, len(full) - len(prompt), extents))
    longest_answer = collections.defaultdict(int)  # {digits: longest answer, EOS included}
    for q, _, answer_length, _ in encoded:
      longest_answer[q.digits] = max(longest_answer[q.digits], answer_length)
    for start in range(0, len(encoded), rows):
      chunk, prompts, answer_lengths, extents = zip(*encoded[start:start + rows])
      budget = max(answer_lengths) + MARGIN
      width, buffer = program_sizes(max(map(len, prompts)), budget)
      padded = np.full((rows, width), encoder.pad_id, np.int32)
      lengths = np.zeros(rows, np.int32)
      sample_lengths = np.zeros(rows, np.int32)
      longest_sample_lengths = np.zeros(rows, np.int32)
      features = {name: np.zeros((rows, width), np.int32) for name in feature_names}
      for i in range(rows):
        prompt = prompts[i % len(prompts)]
        padded[i, :len(prompt)] = prompt
        lengths[i] = len(prompt)
        sample_lengths[i] = len(prompt) + answer_lengths[i % len(prompts)] - 1
        longest_sample_lengths[i] = (len(prompt) + longest_answer[chunk[i % len(chunk)].digits]
                                     - 1)
        if feature_names:
          positions = encoder.positions(task, prompt)
          for name in feature_names:
            features[name][i, :len(prompt)] = positions[name]
      out.append(Batch(task, tuple(chunk), padded, lengths, sample_lengths,
                       longest_sample_lengths, budget, buffer, features, max_extents(extents)))
  return out


def program_sizes(prompt: int, budget: int) -> tuple[int, int]:
  """(prompt width, output buffer) of a batch whose longest prompt and generation budget are
  these: powers of two (at least 32 and 16), the buffer at least half the width and the width
  at least the buffer. Over the whole benchmark (1-100 digits) that is 9 sizes where rounding
  each up alone gives 17, for under 1 % more decoding work (steps x cache slots): a batch so
  widened has short answers (few steps) or a short prompt (a cheap prefill)."""
  width = max(generate_lib.power_of_two(prompt), generate_lib.power_of_two(budget), 32)
  return width, max(generate_lib.power_of_two(budget), width // 2)


def max_extents(extents: Iterable[dict[str, int]]) -> dict[str, int]:
  """The largest value of each position input over `extents`."""
  out = {}
  for e in extents:
    for name, value in e.items():
      out[name] = max(out.get(name, value), value)
  return out
