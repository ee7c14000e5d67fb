"""A question that its task cannot make stops the stream with an error naming the question."""
import itertools
import pickle
import re

import jax
import pytest

import data_testing
from nupa_jax import data
from nupa_jax.tasks import registry


def _failing_solve(self, a, b):
  raise ArithmeticError(f"no answer to {a} and {b}")


def test_a_failing_solver_names_the_task_length_and_question(monkeypatch):
  pipeline = data.Pipeline(data_testing.config(tasks={"add_int": 1.0}, train_digits=(3, 3)))
  monkeypatch.setattr(registry.Task, "solve", _failing_solve)
  with pytest.raises(data.SampleError) as raised:
    pipeline.samples("train", 0, 1)
  message = str(raised.value)
  question = re.fullmatch(
      r"add_int at 3 digits \('(\d+)', '(\d+)'\): ArithmeticError: no answer to \1 and \2",
      message)
  assert question and max(map(len, question.groups())) == 3, message
  assert isinstance(raised.value.__cause__, ArithmeticError)
  # Grain's workers send it to the training process pickled: its type and text survive.
  copy = pickle.loads(pickle.dumps(raised.value))
  assert type(copy) is data.SampleError and str(copy) == message
  # Made in the thread that places batches on the device ahead of the loop, it reaches the
  # training loop.
  device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
  batches = pipeline.train_iterator(device, process_count=1, process_index=0)
  with pytest.raises(data.SampleError) as raised:
    list(itertools.islice(batches, 1))
  batches.close()
  assert re.fullmatch(r"add_int at 3 digits \('\d+', '\d+'\): ArithmeticError: no answer to "
                      r"\d+ and \d+", str(raised.value))  # one line: grain adds only a note


def test_a_failing_sampler_is_named_without_a_question(monkeypatch):
  pipeline = data.Pipeline(data_testing.config(tasks={"sub_sci": 1.0}, train_digits=(2, 2)))

  def failing_sample(self, rng, length):
    raise ValueError(f"cannot draw {self.name} at {length}")

  monkeypatch.setattr(registry.Task, "sample", failing_sample)
  with pytest.raises(data.SampleError,
                     match=r"^sub_sci at 2 digits: ValueError: cannot draw sub_sci at 2$"):
    pipeline.samples("validation", 5, 1)


def test_an_encoder_that_fails_names_the_question(monkeypatch):
  pipeline = data.Pipeline(data_testing.config(tasks={"add_int": 1.0}, train_digits=(5, 5)))
  draw = next(iter(pipeline.stream("train").draws(0, 1)))
  sample = pipeline.source.sample(draw)

  def failing_encode(*args, **kwargs):
    raise ValueError("the rule's answer differs")

  monkeypatch.setattr(type(pipeline.source.encoder), "encode", failing_encode)
  draw = next(iter(pipeline.stream("train").draws(0, 1)))  # the same question, drawn again
  with pytest.raises(data.SampleError) as raised:
    pipeline.source.example(draw)
  assert str(raised.value) == (f"add_int at 5 digits ('{sample.a}', '{sample.b}'): "
                               "ValueError: the rule's answer differs")


def test_a_memory_error_stays_what_it_is(monkeypatch):
  """Running out of memory depends on the host, not on the question: not a SampleError."""
  pipeline = data.Pipeline(data_testing.config(tasks={"add_int": 1.0}, train_digits=(3, 3)))

  def exhausted(self, a, b):
    raise MemoryError

  monkeypatch.setattr(registry.Task, "solve", exhausted)
  with pytest.raises(MemoryError):
    pipeline.samples("train", 0, 1)
