"""NUPA training data generated on the fly: deterministic, resumable, packed, multi-host.

    pipeline = data.Pipeline(config)                  # resolves mixture, test-set hashes, seq_len
    train = pipeline.train_iterator(mesh_or_sharding, start_step=restored_state)
    batch = next(train)          # {inputs, targets, loss_mask, segment_ids, positions,
                                 #  digit_index, significance}: global jax.Array [rows, seq_len],
                                 #  plus num_samples (int, = batch size)
    checkpoint(train.state())    # one int: the next global batch index
    for batch in pipeline.val_iterator(num_batches, mesh_or_sharding): ...
    train.stats()                # samples, test_redraws, overflow_redraws, padding_fraction, ...
    pipeline.train_iterator(mesh_or_sharding, fields=("inputs", ...))  # only these fields

`make_train_iterator(config, sharding, start_step)` is the one-line form. Without a sharding
the iterators give this process's rows as numpy arrays (`process_index` / `process_count`
arguments simulate other processes). `pipeline.seq_len`, `.rows`, `.batch_size` are the
shapes the model sees; `pipeline.samples("validation", start, count)` gives questions as text.

Data is a pure function of (config, index): sample i is drawn by generators seeded with
`[seed, stream, purpose, i]` (stream.py), batch s holds samples [s B, (s + 1) B), row r of it the
k samples from s B + r k. Nothing depends on the number of processes or grain workers, so a
run restored from `state()` with any process count sees exactly the batches it would have.

Fields of `config.data` (`data.defaults()` lists them; missing fields take these defaults):
  tasks           {task: weight}, aliases accepted; the key "all" gives its weight to every
                  task (default {"add_int": 1.0}).
  train_digits    (lo, hi): inclusive digit lengths trained on (default (1, 8)); integer and
                  float tasks may go past the benchmark's range, the others stop at it
                  (`benchmark.testset.max_length`).
  task_digits     {task: (lo, hi)} overriding train_digits per task (default {}).
  length_weights  {length: weight} within each task's range; {} = uniform (the paper draws
                  10^7 samples per length, or every distinct question where fewer exist:
                  uniform from the lengths where 10^7 are feasible). Lengths not named get
                  the "*" entry's weight, or 0 without one (with "*", write every key as a
                  string: a ConfigDict cannot sort int and str keys together).
  pool_size       None: an endless stream. n: the first n samples of the stream, reshuffled
                  every epoch (the paper's 1e6-sample and finetuning-pool experiments).
  packing         "packed": samples_per_row samples per row; "padded": one per row.
  loss_on_padding padded rows only: the loss also covers each row's padding up to the longest
                  sample of this process's rows (targets: the pad token, seeing the sample),
                  as the official NUPA code's labels do (it pads a device's batch to its
                  longest sample and keeps the padding in the labels); default False, answer
                  tokens only. Validation loss (and so the best checkpoint), the answer-token
                  count and tokens/s then include those targets, as the official evaluation
                  loss does. The one setting whose batches depend on how rows are split over
                  processes (the official code pads each device's batch on its own too).
  samples_per_row k (packed); the batch size must be a multiple, and the rows (batch / k)
                  a multiple of the data-parallel devices (default 16).
  seq_len         positions per row; 0 = sized from a probe of the first batches: padded
                  rows take the longest probed sample, packed rows the mean row + 4 standard
                  deviations (rows are stratified by length, so that is tight), rounded up
                  to a multiple of 8.
  num_workers     grain worker processes (mp_prefetch); 0 = generate in this process; -1
                  (default) = auto: 0 on a CPU-only process, else min(6 per local
                  accelerator, usable CPUs - 1) (data/workers.py says why). Workers that die
                  as they start, which grain would wait for forever, end the iterator with
                  `WorkersDied` once a batch is 2 s late. The trainer makes its few
                  validation batches in its own process: workers would take longer to
                  start than to make them.
  device_prefetch batches a background thread takes from grain and places on the devices
                  ahead of the training step (default 2; a loop that takes several a call,
                  `train_iterator(per_call=...)`, finds that many calls' batches ahead); 0 =
                  each batch is made and placed when the training loop asks for it.
  stacked_transfer  place a batch's fields as one array [rows, fields, seq_len], which the
                  train step takes apart: one host-to-device transfer per device and batch
                  instead of one per field (default False).
  exclude_test    never emit a frozen test question (default True) ...
  test_seed       ... of the test set built with this seed ...
  test_per_length ... and this many questions per task and length (the benchmark's 1000).
Read from outside `config.data`: the data seed is the run's `config.seed` (the validation stream
uses it in a disjoint seed space, stream id 1, so it never shares a draw with training), the
samples per global batch `config.train.batch_size`, and the most positions a sample may take
`config.model.attention_span` (0: any), since a model attending within a band of that span
holds no longer one: a longer sample found by the probe, or in any batch, raises
`LongSampleError` naming the span it needs. Old runs' `data.seed` / `data.batch_size`
are mapped by `nupa_jax.settings.upgrade`.
The encoder is `text.Encoder(**config.text)` (`config.text.tokenizer`, `config.text.format`),
or the one passed to `Pipeline`.

Guarantees and costs:
- Exact counts: every batch has exactly batch_size samples; `num_samples` makes samples_seen
  exact. Each batch (and each packed row, for k a power of two dividing B) holds every
  (task, length) cell within one sample of its share (stream.py); cells the frozen test set
  exhausts (e.g. to_float_frac at 1-2 digits) are left out, with a warning.
- No sample is split across rows. A sample of n tokens takes n - 1 positions (EOS is only a
  target). In a row too long for seq_len (rare with the auto size: 4 deviations), the longest
  sample is replaced by a fresh draw of the mixture until the row fits; `overflow_redraws`
  counts these (a slight bias towards short samples in those rows only).
- Padding: `pipeline.expected_padding` (estimated) and `stats()["padding_fraction"]`
  (measured). add_int 1-8 digits, one-digit tokens, auto seq_len: 9% packed (k=16, 280
  positions) vs 51% padded (32 positions for samples of 15.5 on average); all 53 tasks at
  1-8 digits packed: ~25%.
- Test-set exclusion: a drawn question equal to a frozen test question of its task (same
  operands) is redrawn from the same generator; `stats()["test_redraws"]` counts them.
- A question that cannot be made (its task's sampler or solver, or the encoder, raises; or the
  frozen test set holds every question of its cell) raises `SampleError`, naming the task,
  length and operands; the stream is deterministic, so a rerun stops at the same sample
  (`nupa_jax.train` exits with `cli.DATA_ERROR`).
"""
from nupa_jax.data.batches import LongSampleError
from nupa_jax.data.pipeline import (BatchIterator, Pipeline, describe, make_train_iterator,
                                    run_config)
from nupa_jax.data.settings import defaults
from nupa_jax.data.source import SampleError
from nupa_jax.data.workers import WorkersDied, exit_for_dead_workers

__all__ = ["BatchIterator", "LongSampleError", "Pipeline", "SampleError", "WorkersDied",
           "defaults", "describe", "exit_for_dead_workers", "make_train_iterator", "run_config"]
