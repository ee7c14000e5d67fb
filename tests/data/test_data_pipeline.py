"""The pipeline end to end (numpy rows): determinism, process counts, resume, mixture, padding."""
import collections
import dataclasses
import itertools
import pickle
import re
import time

import jax
import numpy as np
import pytest

import data_testing
from nupa_jax import data
from nupa_jax import tasks
from nupa_jax.data import batches
from nupa_jax.data import packing


def take(iterator, n):
  return list(itertools.islice(iterator, n))


def assert_same(batches_a, batches_b):
  assert len(batches_a) == len(batches_b)
  for a, b in zip(batches_a, batches_b):
    assert a.keys() == b.keys()
    for name in a:
      np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.fixture(scope="module")
def pipeline():
  return data.Pipeline(data_testing.config())


def test_same_seed_same_batches_other_seed_differs(pipeline):
  first = take(pipeline.train_iterator(process_count=1, process_index=0), 3)
  again = take(data.Pipeline(data_testing.config()).train_iterator(
      process_count=1, process_index=0), 3)
  assert_same(first, again)
  other = take(data.Pipeline(data_testing.config(seed=1)).train_iterator(
      process_count=1, process_index=0), 1)
  assert not np.array_equal(first[0]["inputs"], other[0]["inputs"])


@pytest.mark.parametrize("count", [2, 4])
def test_process_count_does_not_change_the_global_batch(pipeline, count):
  whole = take(pipeline.train_iterator(process_count=1, process_index=0, start_step=5), 2)
  parts = [take(pipeline.train_iterator(process_count=count, process_index=p, start_step=5), 2)
           for p in range(count)]
  for step, batch in enumerate(whole):
    joined = {name: np.concatenate([part[step][name] for part in parts])
              for name in batch if name != "num_samples"}
    assert_same([joined], [{k: v for k, v in batch.items() if k != "num_samples"}])
    assert sum(part[step]["num_samples"] for part in parts) == batch["num_samples"] == 32


def test_state_restores_an_identical_continuation(pipeline):
  run = pipeline.train_iterator(process_count=1, process_index=0)
  take(run, 2)
  state = run.state()
  assert state == 2
  continued = take(run, 3)
  # A new pipeline (a restarted job), restored with two processes instead of one.
  restored = data.Pipeline(data_testing.config())
  parts = [take(restored.train_iterator(start_step=state, process_count=2, process_index=p), 3)
           for p in range(2)]
  for step, batch in enumerate(continued):
    for name in ("inputs", "targets", "loss_mask", "segment_ids"):
      joined = np.concatenate([part[step][name] for part in parts])
      np.testing.assert_array_equal(batch[name], joined)


def test_state_through_an_orbax_checkpoint(pipeline, tmp_path):
  ocp = pytest.importorskip("orbax.checkpoint")
  run = pipeline.train_iterator(process_count=1, process_index=0)
  take(run, 3)
  manager = ocp.CheckpointManager(tmp_path / "ckpt", options=ocp.CheckpointManagerOptions(
      max_to_keep=2, enable_async_checkpointing=False))
  params = {"w": np.arange(6, dtype=np.float32)}
  manager.save(3, args=ocp.args.Composite(params=ocp.args.StandardSave(params),
                                          data=ocp.args.JsonSave({"next_batch": run.state()})))
  manager.wait_until_finished()
  expected = take(run, 2)
  restored = ocp.CheckpointManager(tmp_path / "ckpt").restore(
      3, args=ocp.args.Composite(params=ocp.args.StandardRestore(params),
                                 data=ocp.args.JsonRestore()))
  np.testing.assert_array_equal(restored["params"]["w"], params["w"])
  resumed = data.make_train_iterator(data_testing.config(), None,
                                     restored["data"]["next_batch"], process_count=1,
                                     process_index=0)
  assert_same(take(resumed, 2), expected)


def test_segments_are_whole_correct_questions(pipeline):
  """Every segment reads back as `a <add> b = a + b`, checked with Python ints."""
  batch = next(pipeline.train_iterator(process_count=1, process_index=0))
  count = 0
  for row in range(pipeline.rows):
    for segment in data_testing.segments(batch, row):
      a, b, answer = data_testing.addition(pipeline.encoder, segment)
      assert a + b == answer
      count += 1
  assert count == batch["num_samples"] == 32


def test_emitted_samples_are_the_unpacked_stream(pipeline):
  """Row r of batch s packs samples s B + r k ... of the stream, in order."""
  step, seen = 4, []
  batch = next(pipeline.train_iterator(start_step=step, process_count=1, process_index=0))
  for row in range(pipeline.rows):
    seen += [data_testing.addition(pipeline.encoder, seg)
             for seg in data_testing.segments(batch, row)]
  questions = pipeline.samples("train", step * 32, 32)
  assert seen == [(int(q.a), int(q.b), int(q.answer)) for q in questions]


def test_padding_fraction_is_reported_and_padded_rows_pay_more(monkeypatch):
  monkeypatch.setattr(batches, "PROBE_SAMPLES", 512)  # the auto seq_len probe, smaller
  stats = {}
  for packing in ("packed", "padded"):
    p = data.Pipeline(data_testing.config(packing=packing, seq_len=0))
    run = p.train_iterator(process_count=1, process_index=0)
    ids = np.concatenate([b["segment_ids"] for b in take(run, 2)])
    stats[packing] = run.stats()
    assert stats[packing]["padding_fraction"] == pytest.approx(1 - (ids > 0).mean())
    assert stats[packing]["samples"] == 64
    assert abs(p.expected_padding - stats[packing]["padding_fraction"]) < 0.1
  assert stats["packed"]["padding_fraction"] < stats["padded"]["padding_fraction"]
  print("padding fraction, add_int 1-8: packed %.3f (k=8), padded %.3f" % (
      stats["packed"]["padding_fraction"], stats["padded"]["padding_fraction"]))


def test_loss_on_padding_reaches_the_batches_of_a_padded_pipeline():
  batches, padding = {}, {}
  for on in (False, True):
    p = data.Pipeline(data_testing.config(packing="padded", loss_on_padding=on, seq_len=64))
    run = p.train_iterator(process_count=1, process_index=0)
    (batches[on],) = take(run, 1)
    padding[on] = run.stats()["padding_fraction"]
  lengths = (batches[False]["segment_ids"] > 0).sum(axis=1)  # each row's sample positions
  extra = batches[True]["loss_mask"].sum(axis=1) - batches[False]["loss_mask"].sum(axis=1)
  assert (extra == lengths.max() - lengths).all() and extra.any()
  assert padding[True] == padding[False]  # scored padding is still padding in the stats


def test_mixture_weights_hold_in_the_emitted_stream():
  c = data_testing.config(tasks={"add_int": 3.0, "max_int": 1.0}, train_digits=(1, 5),
                          length_weights={1: 1.0, 3: 1.0, 5: 2.0})
  p = data.Pipeline(c)
  n = 2000
  counts = collections.Counter((q.task, q.length) for q in p.samples("train", 7, n))
  expected = {("add_int", 1): 3 / 16, ("add_int", 3): 3 / 16, ("add_int", 5): 6 / 16,
              ("max_int", 1): 1 / 16, ("max_int", 3): 1 / 16, ("max_int", 5): 2 / 16}
  assert set(counts) == set(expected)
  for cell, share in expected.items():
    sigma = np.sqrt(n * share * (1 - share))  # binomial; stratification only narrows it
    assert abs(counts[cell] - n * share) < 4 * sigma, (cell, counts[cell], n * share)
  for q in p.samples("train", 0, 50):  # the length of a question is the one drawn
    assert tasks.get(q.task).length(q.a, q.b) == q.length


def test_validation_is_fixed_finite_and_apart_from_training(pipeline):
  val = take(pipeline.val_iterator(3, process_count=1, process_index=0), 10)
  assert len(val) == 3
  assert_same(val, take(pipeline.val_iterator(3, process_count=1, process_index=0), 10))
  train_questions = {(q.a, q.b) for q in pipeline.samples("train", 0, 96)}
  val_questions = [(q.a, q.b) for q in pipeline.samples("validation", 0, 96)]
  assert sum(q in train_questions for q in val_questions) < 10  # only 1-2 digit coincidences


def test_pool_repeats_the_first_questions_of_the_stream_every_epoch(pipeline):
  p = data.Pipeline(data_testing.config(pool_size=48))
  epochs = [[(q.a, q.b) for q in p.samples("train", e * 48, 48)] for e in range(3)]
  assert epochs[0] != epochs[1] != epochs[2]
  first = sorted((q.a, q.b) for q in pipeline.samples("train", 0, 48))  # the endless stream
  assert sorted(epochs[0]) == sorted(epochs[1]) == sorted(epochs[2]) == first


def test_grain_workers_give_the_same_batches(pipeline):
  serial = take(pipeline.train_iterator(start_step=2, process_count=1, process_index=0), 3)
  with pipeline.train_iterator(start_step=2, process_count=1, process_index=0,
                               num_workers=1) as parallel:
    assert_same(take(parallel, 3), serial)
    assert parallel.state() == 5


def test_config_errors_name_the_fix():
  with pytest.raises(ValueError, match="make it a divisor"):
    data.Pipeline(data_testing.config(samples_per_row=5))
  with pytest.raises(ValueError, match="known: packed, padded"):
    data.Pipeline(data_testing.config(packing="ragged"))
  with pytest.raises(ValueError, match="raise config.data.seq_len"):
    data.Pipeline(data_testing.config(seq_len=40))
  with pytest.raises(ValueError, match="do not split over 3 processes"):
    data.Pipeline(data_testing.config()).train_iterator(process_count=3, process_index=0)


def test_samples_longer_than_the_models_attention_span_are_refused():
  """`config.model.attention_span` bounds the samples: the pipeline refuses a span below the
  longest its probe drew, naming the span it needs, and a batch refuses a longer sample."""
  c = data_testing.config()
  c.model = {"attention_span": 5}
  with pytest.raises(batches.LongSampleError, match="in the stream's probe") as refused:
    data.Pipeline(c)
  needed = int(re.search(r"set it to at least (\d+)", str(refused.value)).group(1))
  assert needed > 5
  c.model.attention_span = needed
  batcher = data.Pipeline(c).batcher("train")
  arrays, _ = batcher(0)
  segments = arrays["segment_ids"]
  longest = max(int((segments[r] == s).sum()) for r in range(len(segments))
                for s in set(segments[r].tolist()) - {0})
  assert longest <= needed
  with pytest.raises(batches.LongSampleError, match=f"sample of {longest} positions in batch 0"):
    dataclasses.replace(batcher, longest_sample=longest - 1)(0)
  # Raised in a grain worker, the error comes back to the trainer pickled.
  error = batches.long_sample(longest, longest - 1, 0)
  assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_tight_rows_replace_overflowing_samples_and_keep_exact_counts():
  # 8 stratified add_int samples take 116-132 positions (~124 on average).
  tight = data.Pipeline(data_testing.config(seq_len=126))
  runs = [tight.train_iterator(process_count=count, process_index=0) for count in (1, 2)]
  whole, half = take(runs[0], 4), take(runs[1], 4)
  assert runs[0].stats()["overflow_redraws"] > 0
  for batch, part in zip(whole, half):
    assert_same([{k: v[:2] for k, v in batch.items() if k != "num_samples"}],
                [{k: v for k, v in part.items() if k != "num_samples"}])
    for row in range(4):
      segments = data_testing.segments(batch, row)
      assert len(segments) == 8
      assert all(a + b == c for a, b, c in
                 (data_testing.addition(tight.encoder, s) for s in segments))


def test_device_prefetch_hands_out_the_same_batches_and_counts_only_those_taken():
  """A prefetch thread two batches ahead: the same global arrays in the same order as the
  loop placing each batch itself; `state()` and the stats count what was handed out; a
  finite iterator ends (and stays ended) the same way; close() stops the thread."""
  mesh = jax.make_mesh((1,), ("data",))
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
  plain = data.Pipeline(data_testing.config(device_prefetch=0))
  ahead = data.Pipeline(data_testing.config(device_prefetch=2))
  with plain.train_iterator(sharding, start_step=3) as a, \
       ahead.train_iterator(sharding, start_step=3) as b:
    first, second = take(a, 4), take(b, 4)
    assert isinstance(second[0]["inputs"], jax.Array)
    assert_same([{k: np.asarray(v) for k, v in x.items()} for x in first],
                [{k: np.asarray(v) for k, v in x.items()} for x in second])
    assert a.state() == b.state() == 7
    assert a.stats() == b.stats()
    thread = b._prefetch._thread  # pylint: disable=protected-access
  assert not thread.is_alive()
  with ahead.val_iterator(2, sharding) as validation:
    assert len(list(validation)) == 2
    with pytest.raises(StopIteration):
      next(validation)


def test_the_read_ahead_holds_device_prefetch_calls_of_batches():
  """A loop taking `per_call` batches a call (several steps a call) finds `device_prefetch`
  calls' batches placed ahead, not `device_prefetch` batches."""
  mesh = jax.make_mesh((1,), ("data",))
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
  pipeline = data.Pipeline(data_testing.config(device_prefetch=2))
  for per_call in (1, 3):
    with pipeline.train_iterator(sharding, per_call=per_call) as iterator:
      next(iterator)
      ready = iterator._prefetch._queue  # pylint: disable=protected-access
      deadline = time.monotonic() + 20
      while ready.qsize() < 2 * per_call and time.monotonic() < deadline:
        time.sleep(0.01)
      assert ready.qsize() == 2 * per_call, per_call


def test_a_failure_of_the_prefetch_producer_reaches_the_consumer_in_order():
  from nupa_jax.data import pipeline as pipeline_lib  # pylint: disable=import-outside-toplevel
  calls = itertools.count()

  def produce():
    n = next(calls)
    if n == 2:
      raise ValueError("batch 2 failed")
    return n

  prefetch = pipeline_lib._Prefetch(produce, depth=2)  # pylint: disable=protected-access
  assert [prefetch.next(), prefetch.next()] == [0, 1]
  for _ in range(2):  # raised again on every later call, never a hang
    with pytest.raises(ValueError, match="batch 2 failed"):
      prefetch.next()
  prefetch.close()


class _FailingClose:
  """A grain iterator stand-in whose close fails, as grain's does after a worker's start
  failed under it (its process never started, so it cannot be joined)."""

  def close(self):
    raise AssertionError("can only join a started process")


def test_an_error_inside_the_block_is_not_replaced_by_a_failing_close(pipeline, caplog):
  """The error that ended a `with` block over the iterator is what the caller gets (the
  trainer prints it last), the close's own failure a warning; with no error in the block, a
  failing close raises as before."""
  iterator = pipeline.train_iterator()
  iterator._iterator.close()  # pylint: disable=protected-access
  iterator._iterator = _FailingClose()  # pylint: disable=protected-access
  with pytest.raises(OSError, match="Bad file descriptor"):
    with iterator:
      raise OSError(9, "Bad file descriptor")
  assert "closing the batch iterator after" in caplog.text
  assert "can only join a started process" in caplog.text
  with pytest.raises(AssertionError, match="can only join a started process"):
    with iterator:
      pass


def test_a_prefetching_iterator_nobody_closes_stops_its_thread_when_dropped():
  import gc  # pylint: disable=import-outside-toplevel
  mesh = jax.make_mesh((1,), ("data",))
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
  iterator = data.Pipeline(data_testing.config(device_prefetch=2)).train_iterator(sharding)
  next(iterator)
  thread = iterator._prefetch._thread  # pylint: disable=protected-access
  del iterator
  gc.collect()
  thread.join(timeout=5)
  assert not thread.is_alive()


@pytest.mark.parametrize("device_prefetch", [0, 2])
def test_an_iterator_asked_for_some_fields_gives_those_and_the_same_values(device_prefetch):
  from nupa_jax.training import step as step_lib  # pylint: disable=import-outside-toplevel
  mesh = jax.make_mesh((1,), ("data",))
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
  pipe = data.Pipeline(data_testing.config(device_prefetch=device_prefetch))
  fields = step_lib.fields_read(frozenset())
  assert fields == ("inputs", "targets", "loss_mask", "positions", "segment_ids")
  with pipe.train_iterator(sharding, start_step=2) as every, \
       pipe.train_iterator(sharding, start_step=2, fields=fields) as some, \
       pipe.val_iterator(1, None, fields=["inputs"]) as val:
    full, part = take(every, 2), take(some, 2)
    assert set(next(val)) == {"inputs", "num_samples"}
  for a, b in zip(full, part):
    assert set(b) == {*fields, "num_samples"} and set(a) - set(b) == {"digit_index",
                                                                      "significance"}
    for name in fields:
      np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]), err_msg=name)
  with pytest.raises(ValueError, match=r"unknown batch fields \['digits'\]"):
    pipe.train_iterator(sharding, fields=("inputs", "digits"))


def test_a_model_reading_per_token_features_gets_them():
  from nupa_jax.training import step as step_lib  # pylint: disable=import-outside-toplevel
  assert step_lib.fields_read(frozenset({"digit_index"}))[-1] == "digit_index"
  assert set(step_lib.fields_read({"digit_index", "significance"})) == set(step_lib.ARRAY_FIELDS)


@pytest.mark.parametrize("device_prefetch", [0, 2])
def test_a_stacked_iterator_places_one_array_that_unstacks_to_the_fields(device_prefetch):
  """`stacked=True`: one [rows, fields, seq_len] array a batch, split over the devices by rows
  as each field is; taken apart it is the fields of the plain iterator, value for value."""
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
  pipe = data.Pipeline(data_testing.config(device_prefetch=device_prefetch))
  fields = ("positions", "inputs", "loss_mask", "targets", "segment_ids")
  names = packing.stacked_names(fields)
  assert names == ("inputs", "targets", "loss_mask", "segment_ids", "positions")
  with pipe.train_iterator(sharding, start_step=3, fields=fields) as plain, \
       pipe.train_iterator(sharding, start_step=3, fields=fields, stacked=True) as stacked:
    for a, b in zip(take(plain, 2), take(stacked, 2)):
      assert set(b) == {packing.STACKED, "num_samples"}
      array = b[packing.STACKED]
      assert array.shape == (pipe.rows, len(fields), pipe.seq_len)
      assert array.sharding.is_equivalent_to(sharding, 3)
      assert len(array.addressable_shards) == jax.device_count()
      unstacked = packing.unstack_fields(np.asarray(array), names)
      for name in fields:
        np.testing.assert_array_equal(unstacked[name], np.asarray(a[name]), err_msg=name)
      assert b["num_samples"] == a["num_samples"]
