"""The RF-CoT data mode: loss on the whole response only, over-budget samples dropped and
counted, lengths cut to the context, answers read back from generated tokens."""
import pickle
import zlib

import ml_collections
import numpy as np
import pytest

from nupa_jax import data
from nupa_jax import rfcot
from nupa_jax import runmode
from nupa_jax import tasks
from nupa_jax.data import batches
from nupa_jax.data import mixture as mixture_lib
from nupa_jax.data import source as source_lib
from nupa_jax.data import stream as stream_lib
from nupa_jax.rfcot import budget
from nupa_jax.rfcot import data as rfcot_data

_CONTEXT = 2048


def _config(task_weights, digits=(1, 4), context=_CONTEXT, tokenizer="char"):
  c = ml_collections.ConfigDict()
  c.text = {"tokenizer": {"name": "rfcot", "text_tokenizer": tokenizer, "context": context}}
  c.data = data.defaults()
  c.data.tasks = task_weights
  c.data.train_digits = digits
  c.train = ml_collections.ConfigDict({"batch_size": 8})
  c.data.exclude_test = False
  return c


@pytest.fixture(scope="module")
def pipeline():
  config = _config({"add_int": 1.0, "max_float": 1.0, "get_digit_int": 1.0})
  return data.Pipeline(*data.run_config(config))  # as the trainer builds it


def test_loss_is_on_the_whole_response_and_nothing_else(pipeline):
  assert pipeline.seq_len == _CONTEXT and pipeline.rows == 8  # one sample a row
  batch = next(pipeline.train_iterator(process_count=1, process_index=0))
  tok = pipeline.encoder.tokenizer
  for row, sample in enumerate(pipeline.samples("train", 0, 8)):
    prompt = rfcot.prompt(sample.task, sample.a, sample.b)
    response = rfcot.response(sample.task, sample.a, sample.b)
    used = batch["segment_ids"][row] > 0
    inputs, targets = batch["inputs"][row][used], batch["targets"][row][used]
    mask = batch["loss_mask"][row][used]
    assert not batch["loss_mask"][row][~used].any()
    # Characters are tokens: BOS, then one position per character of prompt and response.
    assert used.sum() == 1 + len(prompt) + len(response)
    assert inputs[0] == tok.bos_id
    assert tok.decode(targets[~mask]) == prompt and not (~mask)[len(prompt):].any()
    assert tok.decode(targets[mask][:-1]) == response and targets[mask][-1] == tok.eos_id
    assert (inputs[1:] == targets[:-1]).all()


def test_over_budget_samples_are_dropped_and_counted():
  """One sample a row of `context` positions: a longer sample is replaced by another draw of
  the mixture and counted, never cut."""
  context = 1500
  encoder = rfcot.Encoder("char", context)
  add = tasks.get("add_int")
  positions = lambda length: [  # noqa: E731
      encoder.used_positions(encoder.encode("add_int", a, b, add.solve(a, b))[0])
      for a, b in budget.questions("add_int", length)]
  assert max(positions(1)) <= context < min(positions(9))  # 1 digit fits, 9 digits never
  mixture = mixture_lib.Mixture(("add_int", "add_int"), (1, 9), np.array([0.5, 0.5]))
  stream = stream_lib.Stream(mixture, batch_size=32, seed=0, stream=stream_lib.TRAIN)
  batcher = batches.Batcher(source_lib.Source(mixture, encoder), stream, samples_per_row=1,
                            seq_len=context, rows=range(32))
  arrays, stats = batcher(0)
  drawn_long = sum(batcher.row_examples(0, r)[0].sample.length == 9 for r in range(32))
  assert drawn_long > 0 and stats["overflow_redraws"] >= drawn_long
  assert stats["samples"] == 32
  used = (arrays["segment_ids"] > 0).sum(axis=1)
  assert (0 < used).all() and (used <= context).all()  # only the 1-digit samples are left
  assert (arrays["segment_ids"] <= 1).all()  # still one whole sample a row


def test_configure_cuts_each_task_to_the_lengths_that_fit():
  config = rfcot_data.configure(_config({"add_int": 1.0, "max_frac": 2.0}, digits=(1, 20),
                                        context=1800))
  encoder = rfcot.Encoder("char", 1800)
  assert config.data.packing == "padded" and config.data.seq_len == 1800
  for task in ("add_int", "max_frac"):
    lo, hi = config.data.task_digits[task]
    assert lo == 1 and 1 <= hi < 20
    # The pipeline's probe of a cell and the budget tool's questions are the same ones.
    assert hi == budget.fit(encoder, task).digits
    rng = np.random.default_rng([zlib.crc32(task.encode()), hi + 1])
    over = [tasks.get(task).sample(rng, hi + 1) for _ in range(budget.DEFAULT_SAMPLES)]
    assert max(1 + len(rfcot.prompt(task, a, b)) + len(rfcot.response(task, a, b))
               for a, b in over) > 1800
  assert dict(config.data.tasks) == pytest.approx({"add_int": 1 / 3, "max_frac": 2 / 3})


def test_configure_leaves_out_tasks_that_never_fit_and_refuses_when_none_does():
  config = rfcot_data.configure(_config({"add_int": 1.0, "add_frac": 1.0}, context=1500))
  assert set(config.data.tasks) == {"add_int"}
  with pytest.raises(ValueError, match="raise the context"):
    rfcot_data.configure(_config({"add_frac": 1.0}, context=1500))
  with pytest.raises(ValueError, match="has no RF-CoT rule"):
    rfcot_data.configure(_config({"count_int": 1.0}))


def test_decode_answer_reads_after_so_the_answer_is(pipeline):
  encoder = pipeline.encoder
  full, mask = encoder.encode("add_int", "28", "35", "63")
  generated = np.concatenate([full[mask], [encoder.pad_id] * 3])
  assert encoder.decode_answer("add_int", generated) == "63"
  assert encoder.decode_answer("add_int", full[mask][:-20]) == ""  # cut before the answer
  prompt, prompt_mask = encoder.encode("add_int", "28", "35", None)
  assert not prompt_mask.any() and (prompt == full[:len(prompt)]).all()
  with pytest.raises(ValueError, match="task's answer is"):
    encoder.encode("add_int", "28", "35", "64")


def test_encoder_pickles_for_grain_workers(pipeline):
  again = pickle.loads(pickle.dumps(pipeline.encoder))
  sample = ("max_float", "12.5", "3.75", "12.5")
  assert (again.encode(*sample)[0] == pipeline.encoder.encode(*sample)[0]).all()


def test_config_family_builds_an_rfcot_run():
  from configs import rfcot as rfcot_config  # pylint: disable=g-import-not-at-top
  from nupa_jax import models  # pylint: disable=g-import-not-at-top
  config = rfcot_config.get_config("size=tiny,tasks=add_int+max_int,context=2048")
  assert runmode.resolve(config).name == "rfcot/scratch"
  encoder = rfcot_data.encoder_from_config(config)
  assert (encoder.tokenizer_name, encoder.context) == ("char", 2048)
  configured = rfcot_data.configure(config, encoder)
  assert set(configured.data.task_digits) == {"add_int", "max_int"}
  assert configured.data.task_digits["max_int"] == (1, 100)  # short traces: every length fits
  assert configured.data.task_digits["add_int"][1] < 20
  models.resolve(configured.model, encoder.vocab_size)
  assert len(rfcot_config.get_config().data.tasks) == len(rfcot.TABLE_TASKS)
  with pytest.raises(ValueError, match="has no RF-CoT rule"):
    rfcot_config.get_config("tasks=count_int")
