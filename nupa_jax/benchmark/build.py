"""Write the frozen test set to disk: `test.jsonl` and the `nupa_test` TFDS dataset.

The work is split by task over a process pool. Each worker writes its task's questions to a
JSONL part and to one array_record shard of its own, so the parent only concatenates parts and
records the shard lengths in TFDS' dataset info: file contents depend on (seed, per_length,
tasks) alone, never on scheduling. Shard i holds the i-th task, so reading the shards in order
gives the questions in test-set order.
"""
import contextlib
import dataclasses
import multiprocessing
import os
import pathlib
import shutil
import sys
import tempfile
from typing import Sequence

import tensorflow_datasets as tfds
import tqdm
from tensorflow_datasets.core import file_adapters

from nupa_jax import tasks
from nupa_jax.benchmark import files
from nupa_jax.benchmark import testset
from nupa_jax.benchmark.nupa_test import nupa_test_dataset_builder as nupa_test

FORMATS = ("jsonl", "tfds")
_SHARD_WRITER = file_adapters.ADAPTER_FOR_FORMAT[file_adapters.FileFormat.ARRAY_RECORD]


@dataclasses.dataclass(frozen=True)
class _Job:
  index: int
  task: str
  seed: int
  per_length: int
  jsonl_part: pathlib.Path | None
  shard: pathlib.Path | None


def _write_task(job: _Job) -> tuple[int, int, int]:
  """Writes one task's questions; returns (job index, questions, serialized TFDS bytes)."""
  questions = [question for length in tasks.get(job.task).test_digits
               for question in testset.questions(job.task, length, job.seed, job.per_length)]
  if job.jsonl_part:
    with open(job.jsonl_part, "w") as f:
      f.writelines(question.to_json() + "\n" for question in questions)
  num_bytes = 0
  if job.shard:
    records = [nupa_test.serialize(question) for question in questions]
    _SHARD_WRITER.write_examples(job.shard, ((None, record) for record in records))
    num_bytes = sum(map(len, records))
  return job.index, len(questions), num_bytes


def _run(jobs: list[_Job], workers: int, progress: bool) -> dict[int, tuple[int, int]]:
  """Runs the jobs, biggest first; returns {job index: (questions, bytes)}."""
  expected = {job.index: job.per_length * len(tasks.get(job.task).test_digits) for job in jobs}
  jobs = sorted(jobs, key=lambda job: -expected[job.index])
  bar = tqdm.tqdm(total=sum(expected.values()), unit="q", unit_scale=True, file=sys.stderr,
                  disable=not progress, desc="building test set")
  done = {}
  with contextlib.ExitStack() as stack:
    if workers > 1:
      pool = stack.enter_context(multiprocessing.Pool(workers))
      results = pool.imap_unordered(_write_task, jobs)
    else:  # in process: no fork, easy to debug and profile
      results = map(_write_task, jobs)
    for index, count, num_bytes in results:
      done[index] = (count, num_bytes)
      bar.total -= expected[index] - count  # deduplication left fewer than asked
      bar.update(count)
  bar.close()
  return done


def build(out_dir: str | os.PathLike, *, seed: int = 0, per_length: int = 1000,
          task_names: Sequence[str] | None = None, formats: Sequence[str] = FORMATS,
          workers: int | None = None, progress: bool = True) -> dict[str, int]:
  """Writes the test set of `task_names` (all tasks if None) to `out_dir`.

  Returns {task: number of questions}. `formats` is a subset of `FORMATS`. A test set already
  in `out_dir` is removed first (every format), so that a directory never mixes two builds.
  """
  unknown = sorted(set(formats) - set(FORMATS))
  if unknown or not formats:
    raise ValueError(f"unknown test-set format(s) {unknown or formats}; known: "
                     f"{', '.join(FORMATS)}")
  names = testset.resolve_tasks(task_names)
  out_dir = pathlib.Path(out_dir)
  out_dir.mkdir(parents=True, exist_ok=True)
  workers = min(workers or os.cpu_count() or 1, len(names))

  (out_dir / files.JSONL).unlink(missing_ok=True)
  shutil.rmtree(out_dir / nupa_test.NAME, ignore_errors=True)
  builder = None
  if "tfds" in formats:
    builder = nupa_test.Builder(data_dir=out_dir, seed=seed, per_length=per_length, tasks=names)
    builder.data_path.mkdir(parents=True)
    template = tfds.core.ShardedFileTemplate(
        data_dir=builder.data_path, dataset_name=nupa_test.NAME, split=nupa_test.SPLIT,
        filetype_suffix=nupa_test.FILE_FORMAT)

  with tempfile.TemporaryDirectory(dir=out_dir, prefix=".parts-") as parts:
    parts = pathlib.Path(parts)
    jobs = [_Job(index=i, task=name, seed=seed, per_length=per_length,
                 jsonl_part=parts / f"{i:05d}.jsonl" if "jsonl" in formats else None,
                 shard=template.sharded_filepath(shard_index=i, num_shards=len(names))
                 if builder else None)
            for i, name in enumerate(names)]
    done = _run(jobs, workers, progress)
    if "jsonl" in formats:
      partial = parts / files.JSONL
      with open(partial, "wb") as out:
        for job in jobs:
          with open(job.jsonl_part, "rb") as part:
            shutil.copyfileobj(part, out, 1 << 24)
      os.replace(partial, out_dir / files.JSONL)

  if builder:
    split = tfds.core.SplitInfo(
        name=nupa_test.SPLIT, shard_lengths=[done[i][0] for i in range(len(names))],
        num_bytes=sum(num_bytes for _, num_bytes in done.values()), filename_template=template)
    builder.info.set_splits(tfds.core.SplitDict([split]))
    builder.info.write_to_directory(builder.data_path)
  return {name: done[i][0] for i, name in enumerate(names)}
