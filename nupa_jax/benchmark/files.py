"""Where a built test-set directory keeps each format, and reading the questions back."""
import collections
import json
import os
import pathlib
from typing import Iterator, Sequence

import tensorflow_datasets as tfds

from nupa_jax.benchmark import testset
from nupa_jax.benchmark.nupa_test import nupa_test_dataset_builder as nupa_test

JSONL = "test.jsonl"


def read_test_set(test_dir: str | os.PathLike) -> Iterator[testset.Question]:
  """The questions of a built test set, from `test.jsonl` or else from the TFDS dataset."""
  test_dir = pathlib.Path(test_dir)
  if (test_dir / JSONL).exists():
    with open(test_dir / JSONL) as f:
      for line in f:
        yield testset.Question(**json.loads(line))
  elif any((test_dir / nupa_test.NAME).glob("*/dataset_info.json")):
    yield from _read_tfds(test_dir)
  else:
    raise FileNotFoundError(
        f"no test set in {test_dir}: expected {test_dir / JSONL} or a TFDS dataset in "
        f"{test_dir / nupa_test.NAME}; write one with `python -m nupa_jax.benchmark build "
        f"--out {test_dir}`")


def select_questions(test_dir: str | os.PathLike, task_names: Sequence[str] | None = None,
                     per_length: int | None = None
                     ) -> tuple[dict[str, list[testset.Question]], int]:
  """{task: questions, shortest first}: the first `per_length` questions of each task and
  length in the file's order (all of them when None), of `task_names` (names or aliases; all
  tasks when None); and how many questions of those tasks the test set holds. `evaluate_llm`
  asks these questions and `benchmark score --tasks --per-length` scores the same ones."""
  names = testset.resolve_tasks(task_names)
  selected = {name: [] for name in names}
  counts = collections.Counter()
  for q in read_test_set(test_dir):
    if q.task in selected:
      counts[q.task, q.digits] += 1
      if per_length is None or counts[q.task, q.digits] <= per_length:
        selected[q.task].append(q)
  for questions in selected.values():
    questions.sort(key=lambda q: q.digits)
  return {name: qs for name, qs in selected.items() if qs}, sum(counts.values())


def _read_tfds(test_dir: pathlib.Path, batch: int = 4096) -> Iterator[testset.Question]:
  source = tfds.data_source(nupa_test.NAME, data_dir=test_dir, split=nupa_test.SPLIT,
                            download=False)
  for start in range(0, len(source), batch):
    records = source.__getitems__(range(start, min(start + batch, len(source))))
    yield from map(nupa_test.from_record, records)
