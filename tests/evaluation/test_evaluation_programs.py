"""The evaluator's speed-ups change no result: its predictions equal those of the loop it
replaced (one batch of one task at a time, each compiled when first met, output cut on the
device), each generation program compiles once, and a whole benchmark needs only a few."""
import collections

import jax
import numpy as np
import pytest
from flax import nnx

from configs import common
from configs import mixed
from nupa_jax import models
from nupa_jax import plugins  # noqa: F401  (registers the digit-text run mode)
from nupa_jax import runmode
from nupa_jax import sharding
from nupa_jax.benchmark import testset
from nupa_jax.evaluation import evaluator as evaluator_lib
from nupa_jax.evaluation import generate as generate_lib
from nupa_jax.evaluation import questions as questions_lib
from nupa_jax.text import Encoder

# 20- and 100-digit integer tasks, fractions (answers of varied lengths) and answers longer
# than their prompts.
TASKS = ["add_int", "max_int", "add_frac", "to_scient_int"]


def _evaluator(pe: str, per_length: int = 2, batch_size: int = 12):
  config = common.base("tiny")
  config.model.posenc = {"name": pe}
  config.data.tasks = {name: 1.0 for name in TASKS}
  config.eval.digits = (1, 9)
  config.eval.per_length = per_length
  config.eval.batch_size = batch_size
  encoder = Encoder()
  features = {"digit_index"} if pe == "abacus" else set()
  evaluator = evaluator_lib.Evaluator(config, encoder, sharding.make_mesh({"data": -1}),
                                      features)
  model = models.build(config.model, encoder.vocab_size, rngs=nnx.Rngs(0))
  return evaluator, model


def _recorded_generations(monkeypatch, evaluator, model) -> list[tuple[str, list[int]]]:
  """(task, generated tokens) of every question, in the order the evaluator reads them."""
  seen = []
  decode = evaluator.encoder.decode_answer

  def recording(task, tokens):
    seen.append((task, np.asarray(tokens).tolist()))
    return decode(task, tokens)

  monkeypatch.setattr(evaluator.encoder, "decode_answer", recording)
  evaluator.evaluate(*nnx.split(model))
  return seen


def _one_batch_at_a_time(evaluator, model, encoder) -> list[tuple[str, list[int]]]:
  """The evaluation loop as it was, written out: each task's questions in rows of
  `evaluator.rows` (spare rows repeat prompts), prompts padded to the power of two above the
  longest, generation up to the longest answer + MARGIN, then cut to that on the device."""
  out = []
  for task, questions in evaluator.questions.items():
    for start in range(0, len(questions), evaluator.rows):
      chunk = questions[start:start + evaluator.rows]
      prompts = [encoder.encode(task, q.a, q.b, None)[0] for q in chunk]
      answers = [len(encoder.encode(task, q.a, q.b, q.answer)[0]) - len(p)
                 for q, p in zip(chunk, prompts)]
      width = generate_lib.power_of_two(max(map(len, prompts)))
      padded = np.full((evaluator.rows, width), encoder.pad_id, np.int32)
      features = np.zeros_like(padded)
      for i in range(evaluator.rows):
        prompt = prompts[i % len(prompts)]
        padded[i, :len(prompt)] = prompt
        features[i, :len(prompt)] = encoder.positions(task, prompt)["digit_index"]
      lengths = [len(prompts[i % len(prompts)]) for i in range(evaluator.rows)]
      generated = np.asarray(generate_lib.generate(
          model, padded, lengths, max_new_tokens=max(answers) + questions_lib.MARGIN,
          eos_id=encoder.eos_id, pad_id=encoder.pad_id,
          features={"digit_index": features} if evaluator.next_features else None,
          next_features=evaluator.next_features))
      out.extend((task, generated[i].tolist()) for i in range(len(chunk)))
  return out


class GenerateCompiles:
  """Counts backend compilations of the decoder's program while entered."""

  def __init__(self):
    self.count = 0

  def _listen(self, event, duration, **kwargs):
    del duration
    if event == "/jax/core/compile/backend_compile_duration" and "_generate" in str(
        kwargs.get("fun_name")):
      self.count += 1

  def __enter__(self):
    jax.monitoring.register_event_duration_secs_listener(self._listen)
    return self

  def __exit__(self, *exc):
    jax.monitoring.unregister_event_duration_listener(self._listen)


@pytest.mark.parametrize("pe", ["rope", "abacus"])
def test_generations_equal_the_one_batch_at_a_time_loop(monkeypatch, pe):
  """Token for token: the predictions and scores read from them are the same too."""
  evaluator, model = _evaluator(pe)
  got = _recorded_generations(monkeypatch, evaluator, model)
  expected = _one_batch_at_a_time(evaluator, model, evaluator.encoder)
  assert len(got) == sum(map(len, evaluator.questions.values())) == 2 * (7 + 5 + 9 + 5)
  assert any(b.program[1] != generate_lib.power_of_two(int(max(b.lengths)))
             for b in evaluator.batches)  # some batches run wider programs than they did
  assert got == expected
  assert len({tuple(tokens) for _, tokens in got}) > len(got) // 2  # not one constant reply


def test_wider_programs_decode_the_same_tokens():
  """Batches whose prompt width or output buffer `program_sizes` rounds up further than to
  the powers of two above the longest prompt and budget generate what those would."""
  encoder = Encoder()
  model = models.build(common.model("tiny"), encoder.vocab_size, rngs=nnx.Rngs(0))
  questions = {task: testset.questions(task, digits, seed=0, per_length=3)
               for task, digits in (("length_int", 60), ("to_scient_int", 25))}
  batches = questions_lib.make_batches(encoder, questions, rows=3)
  tight = [(generate_lib.power_of_two(int(max(b.lengths))),
            generate_lib.power_of_two(b.max_new_tokens)) for b in batches]
  assert [b.program[1:] for b in batches] == [(64, 32), (64, 64)]
  assert tight == [(64, 16), (32, 64)]
  for batch, (width, buffer) in zip(batches, tight):
    def run(prompts, buffer):
      return np.asarray(generate_lib.generate(
          model, prompts, batch.lengths, max_new_tokens=batch.max_new_tokens, buffer=buffer,
          eos_id=encoder.eos_id, pad_id=encoder.pad_id))
    np.testing.assert_array_equal(run(batch.prompts, batch.buffer),
                                  run(batch.prompts[:, :width], buffer))


def test_each_generation_program_compiles_once(monkeypatch):
  evaluator, model = _evaluator("rope", per_length=3, batch_size=8)
  programs = {b.program for b in evaluator.batches}
  assert len(programs) < len(evaluator.batches)
  with GenerateCompiles() as first:
    evaluator.evaluate(*nnx.split(model))
  with GenerateCompiles() as again:
    evaluator.evaluate(*nnx.split(model))
  assert (first.count, again.count) == (len(programs), 0)


@pytest.mark.parametrize("per_length, bound", [(5, 9), (20, 9)])
def test_the_whole_benchmark_needs_few_programs(per_length, bound):
  """All 53 tasks over their whole ranges (1-100 digits) in rows of 256."""
  config = mixed.get_config("size=tiny")
  encoder = runmode.resolve(config).text.encoder(config)
  tasks = questions_lib.eval_tasks(config)
  questions = questions_lib.load_questions(tasks, config.eval.digits, per_length, seed=0)
  batches = questions_lib.make_batches(encoder, questions, 256)
  programs = collections.Counter(b.program for b in batches)
  assert len(programs) <= bound, sorted(programs)


def test_task_digits_set_a_tasks_lengths_and_an_unevaluated_task_is_named(caplog):
  config = common.base("tiny")
  config.data.tasks = {name: 1.0 for name in TASKS}
  config.eval.digits = (1, 9)
  config.eval.per_length = 1
  config.eval.task_digits = {"max_int": (30, 31), "mod_int": (3, 4)}
  with caplog.at_level("WARNING"):
    evaluator = evaluator_lib.Evaluator(config, Encoder(), sharding.make_mesh({"data": -1}))
  assert [q.digits for q in evaluator.questions["max_int"]] == [30, 31]
  assert {q.digits for q in evaluator.questions["add_int"]} == set(range(3, 10))
  assert "task_digits names tasks not evaluated here (ignored): mod_int" in caplog.text
