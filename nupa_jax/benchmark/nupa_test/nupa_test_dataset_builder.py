"""The NUPA test set as a TFDS dataset (`nupa_test`), stored as array_record.

Read it without TensorFlow: `tfds.data_source("nupa_test", data_dir=DIR, split="test")`, or
`grain.MapDataset.source(...)` over that; text fields come back as bytes and `b` is empty for
unary tasks. Records keep the test set's order (task, then length, then index), like
`test.jsonl`.

`Builder` is a plain `GeneratorBasedBuilder`, so `download_and_prepare()` builds the dataset
the standard way. That path serialises ~5k examples/s here, so `benchmark build` writes the same
records through `serialize` from several processes instead (`nupa_jax/benchmark/build.py`);
`tests/benchmark` checks that the two agree.
"""
import numpy as np
import tensorflow_datasets as tfds
from tensorflow_datasets.proto import tf_example_pb2

from nupa_jax.benchmark import testset

NAME = "nupa_test"
SPLIT = "test"
FILE_FORMAT = "array_record"
_INT_FIELDS = ("digits",)

_DESCRIPTION = (
    "NUPA test questions (Number Cookbook, ICLR 2025) for every task and test length: id, task, "
    "digits (question length), bucket (S/M/L/XL), operands a and b (b empty for unary tasks), "
    "the paper's text prompt and the exact answer.")

FEATURES = tfds.features.FeaturesDict({
    field: tfds.features.Scalar(np.int32) if field in _INT_FIELDS else tfds.features.Text()
    for field in testset.FIELDS
})


def example(question: testset.Question) -> dict:
  """The TFDS example of a question (`b` = "" for unary tasks)."""
  return {**question._asdict(), "b": question.b or ""}


def serialize(question: testset.Question) -> bytes:
  """The `tf.train.Example` bytes of `example(question)`: what `FEATURES.serialize_example`
  gives, built directly on the proto (10x faster) and with a deterministic map order."""
  proto = tf_example_pb2.Example()
  feature = proto.features.feature
  for field, value in example(question).items():
    if field in _INT_FIELDS:
      feature[field].int64_list.value.append(value)
    else:
      feature[field].bytes_list.value.append(value.encode())
  return proto.SerializeToString(deterministic=True)


def from_record(record: dict) -> testset.Question:
  """A question from a record read through `tfds.data_source`."""
  fields = {f: record[f] if f in _INT_FIELDS else record[f].decode() for f in testset.FIELDS}
  return testset.Question(**{**fields, "digits": int(fields["digits"]), "b": fields["b"] or None})


class Builder(tfds.core.GeneratorBasedBuilder):
  """NUPA test questions for every task and test length (paper §2, Appendix A.1)."""

  VERSION = tfds.core.Version("1.0.0")
  RELEASE_NOTES = {"1.0.0": "First release."}

  def __init__(self, *, seed: int = 0, per_length: int = 1000,
               tasks: tuple[str, ...] | None = None, **kwargs):
    self._seed = seed
    self._per_length = per_length
    self._tasks = testset.resolve_tasks(tasks)
    kwargs.setdefault("file_format", FILE_FORMAT)
    super().__init__(**kwargs)

  def _info(self) -> tfds.core.DatasetInfo:
    return self.dataset_info_from_configs(
        description=_DESCRIPTION,
        features=FEATURES,
        homepage="https://arxiv.org/abs/2411.03766",
        disable_shuffling=True,
        metadata=tfds.core.MetadataDict(seed=self._seed, per_length=self._per_length,
                                        tasks=self._tasks),
    )

  def _split_generators(self, dl_manager):
    del dl_manager  # generated, nothing to download
    return {SPLIT: self._generate_examples()}

  def _generate_examples(self):
    questions = testset.iter_test_set(self._tasks, self._seed, self._per_length)
    for index, question in enumerate(questions):
      yield index, example(question)
