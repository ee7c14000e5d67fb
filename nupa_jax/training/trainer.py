"""`train_and_evaluate(config, workdir)`: the main job, from a config to an evaluated model.

Setup checks everything a config decides (mesh, data, model, optimizer, evaluation tasks)
before any long work and reports a `ConfigError` naming the fix. Then the loop: global
batches from the data pipeline, a jitted pure train step over the mesh, a log record every
`train.log_every` steps, evaluation (validation loss + generation on the frozen test set)
every `eval.every` steps and at the end, an async checkpoint every `checkpoint.every` steps
and at every evaluation, written before the evaluation's generation starts (so an evaluation
killed part way, or the final one, never costs the checkpoint).

Stops: SIGTERM, SIGINT or a preemption notice stops the run at a step that every process
agrees on, with a checkpoint of that step, and raises `stopping.Stopped` (exit status 143 /
130; see training/stopping.py): rerunning the same command resumes there.

Restarts: a workdir with a checkpoint resumes from its latest step — model, optimizer, step
and the data position (the log's lines after that step are dropped and a `resume` record
written; a rerun without a checkpoint starts the log afresh after a `restart` record), so the
resumed run computes exactly the losses the uninterrupted run
would have (bit for bit on CPU; on GPU set `XLA_FLAGS=--xla_gpu_deterministic_ops=true`, at
some cost in speed, for the same guarantee). Losses are synced to the host only at log,
evaluation and checkpoint steps (every step's loss and gradient norm are checked there, before
any save), so a NaN or inf stops the run with the last good checkpoint intact.
"""
from __future__ import annotations

import contextlib
import copy
import math
import os
import time

import jax
import numpy as np
from flax import nnx

from nupa_jax import checkpoint as checkpoint_lib
from nupa_jax import data as data_lib
from nupa_jax import paths
from nupa_jax import plugins  # pylint: disable=unused-import  (registers every run mode)
from nupa_jax import runmode
from nupa_jax import sharding as sharding_lib
from nupa_jax.data import batches as batches_lib
from nupa_jax.data import packing
from nupa_jax.data import workers as workers_lib
from nupa_jax.evaluation import evaluator as evaluator_lib
from nupa_jax.evaluation import results as results_lib
from nupa_jax.evaluation import settings as eval_settings
from nupa_jax.models import attention
from nupa_jax.training import data_wait
from nupa_jax.training import optimizer as optimizer_lib
from nupa_jax.training import settings as settings_lib
from nupa_jax.training import step as step_lib
from nupa_jax.training import stopping
from nupa_jax.training import writers

CONFIG_FILE = "config.json"


class ConfigError(ValueError):
  """A config that cannot run; the message says what to change."""


class DivergedError(RuntimeError):
  """The loss or the gradient norm became NaN or infinite."""


class _Run:
  """Everything a config fixes for a run, built and checked before training starts.

  The run mode (`runmode.resolve`: digit text, RF-CoT or a checkpoint's prompts; a model from
  scratch or a pretrained checkpoint) is resolved once here; the rest of the trainer calls it.
  """

  def __init__(self, config, workdir: paths.Path):
    self.workdir = workdir
    try:
      self.checkpoint = settings_lib.Checkpoint.from_config(config)
      self.eval = eval_settings.Eval.from_config(config)
      # Processes of one run drive equal numbers of devices, so each resolves the same count.
      self.train = settings_lib.Train.from_config(config).resolved(
          workers_lib.local_accelerators(), self.checkpoint.every, self.eval.every)
      self.mode = runmode.resolve(config)
      self.mesh = sharding_lib.make_mesh(config.mesh.shape)
      self.batch_sharding = sharding_lib.batch_sharding(self.mesh)
      self.replicated = sharding_lib.replicated(self.mesh)
      # The config as run: with the text mode's data fields (RF-CoT: padded rows, cut lengths).
      config, self.encoder = data_lib.run_config(config)
      config = copy.deepcopy(config)  # the run's own: with the count of steps a call it runs
      config.train.steps_per_call = self.train.steps_per_call
      self.config = config
      self.pipeline = data_lib.Pipeline(config, self.encoder)
      self.pipeline.local_rows(self.batch_sharding)  # rows must split over the batch axes
      _check_microbatches(self.train.microbatches, self.pipeline.rows,
                          sharding_lib.batch_divisor(self.mesh))
      _check_steps_per_call(self.train, self.checkpoint.every, self.eval.every)
      attention.check_segments(int(config.model.get("cudnn_segments", 0)),
                               self.pipeline.settings.samples_per_row)
      self.schedule = optimizer_lib.schedule(self.train)
      self.tx = optimizer_lib.make(self.train)
      self.spec = self.mode.model.state_spec(config, self.encoder.vocab_size, self.mesh,
                                             seed=config.seed, tx=self.tx)
      self.wrt = self.mode.model.trainable(config)
      self.evaluator = evaluator_lib.Evaluator(config, self.encoder, self.mesh,
                                               self.spec.feature_names)
    except ValueError as e:
      raise ConfigError(str(e)) from e

  def init_state(self):
    """Fresh state, as the model source starts it (`config.init_from`, a checkpoint)."""
    c = self.config
    try:
      return self.mode.model.initial_state(self.spec, c, self.encoder.vocab_size, self.mesh,
                                           seed=c.seed, tx=self.tx)
    except ValueError as e:
      raise ConfigError(str(e)) from e


def _write_config(config, workdir: paths.Path) -> None:
  paths.write_text_atomic(workdir / CONFIG_FILE,
                          config.to_json_best_effort(indent=2, sort_keys=True) + "\n")


class _Window:
  """Host copies of the step metrics since the last log record, and the time they took."""

  def __init__(self):
    self.pending = []  # (first step, device metrics) of calls not yet on the host
    self.metrics = []  # host metric dicts of the steps since the last record
    self.samples = 0
    self.start = time.perf_counter()
    self.paused = 0.0  # evaluation / checkpoint time, not counted as training time
    self.data_wait = data_wait.DataWait()  # time in next(batches), per record
    self.data_counts: dict[str, float] = {}  # the iterator's counts at the last record

  def fetch(self) -> None:
    """Brings pending metrics to the host; raises DivergedError on a non-finite loss or
    gradient (a step with a non-finite gradient has already spoiled the parameters)."""
    for first, values in zip([s for s, _ in self.pending],
                             jax.device_get([m for _, m in self.pending])):
      for step, step_values in enumerate(_per_step(values), start=first):
        for key, name in (("loss", "the loss"), ("grad_norm", "the gradient norm")):
          value = float(step_values[key])
          if not math.isfinite(value):
            raise DivergedError(f"{name} became {value} at step {step}")
        self.metrics.append(step_values)
    self.pending = []

  def record(self, step: int, samples_seen: int,
             data_counts: dict[str, float]) -> tuple[dict, float]:
    """The log record of the window (means over its steps) and its steps per second.
    `data_counts` (the iterator's `stats()`, over this process's rows) gives the window's
    test-set and overflow redraws and the share of its row positions that are padding."""
    elapsed = max(time.perf_counter() - self.start - self.paused, 1e-9)
    mean = lambda key: float(np.mean([float(m[key]) for m in self.metrics]))
    tokens = sum(float(m["tokens"]) for m in self.metrics)
    record = {"step": step, "samples_seen": samples_seen, "loss": mean("loss"),
              "learning_rate": float(self.metrics[-1]["learning_rate"]),
              "grad_norm": mean("grad_norm"), "tokens_per_s": tokens / elapsed,
              "samples_per_s": self.samples / elapsed,
              "data_wait_fraction": self.data_wait.interval(elapsed),
              **_data_counts(data_counts, self.data_counts), **device_memory()}
    self.data_counts = dict(data_counts)
    steps_per_s = len(self.metrics) / elapsed
    self.metrics, self.samples = [], 0
    self.start, self.paused = time.perf_counter(), 0.0
    return record, steps_per_s


def _per_step(values: dict) -> list[dict]:
  """The host metrics of one call, a dict per step: a single step's scalars, or the metrics a
  call of several steps stacked over them (`train.steps_per_call`)."""
  if np.ndim(values["loss"]) == 0:
    return [values]
  return [{k: v[i] for k, v in values.items()} for i in range(len(values["loss"]))]


def _data_counts(now: dict[str, float], before: dict[str, float]) -> dict[str, float]:
  """The counts of the batches between two `stats()` of a data iterator."""
  delta = batches_lib.with_padding(
      {name: now[name] - before.get(name, 0) for name in batches_lib.STATS})
  return {"test_redraws": int(delta["test_redraws"]),
          "overflow_redraws": int(delta["overflow_redraws"]),
          "padding_fraction": delta["padding_fraction"]}


def _check_microbatches(microbatches: int, rows: int, divisor: int) -> None:
  """ValueError unless each batch-axis device's rows split into `microbatches` equal parts."""
  if (rows // divisor) % microbatches:
    raise ValueError(f"config.train.microbatches={microbatches} does not divide the "
                     f"{rows // divisor} rows of each of the {divisor} batch-axis devices "
                     f"({rows} rows a batch)")


def _check_steps_per_call(train: settings_lib.Train, ckpt_every: int, eval_every: int) -> None:
  """ValueError unless every step the loop must stop at to log, checkpoint or evaluate ends a
  call of `train.steps_per_call` steps."""
  k = train.steps_per_call
  for name, every in (("train.log_every", train.log_every),
                      ("checkpoint.every", ckpt_every), ("eval.every", eval_every)):
    if settings_lib.aligned_intervals([every], train.steps) and every % k:
      raise ValueError(f"config.{name}={every} is not a multiple of "
                       f"config.train.steps_per_call={k}: make it one, or lower steps_per_call")


def device_memory() -> dict[str, float]:
  """`peak_memory_gib`: the most memory one of this process's devices has held since the
  process started (so a record shows what the run needs so far), where the backend reports it:
  GPU and TPU do, the CPU backend does not, and a backend may refuse (then no field). On
  several hosts the log shows process 0's devices only."""
  try:
    peaks = [(device.memory_stats() or {}).get("peak_bytes_in_use")
             for device in jax.local_devices()]
  except Exception:  # pylint: disable=broad-except  (a PJRT plugin's UNIMPLEMENTED)
    return {}
  peaks = [peak for peak in peaks if peak is not None]
  return {"peak_memory_gib": max(peaks) / 2**30} if peaks else {}


def _recipe_line(config, train: settings_lib.Train) -> str:
  """What the run trains, in one line: the choices a config family or size may have made."""
  text = config.get("text") or {}
  posenc = (config.get("model") or {}).get("posenc") or {}
  return (f"recipe: tasks {dict(config.data.tasks)}, digits {tuple(config.data.train_digits)}, "
          f"pe {dict(posenc)}, text format {dict(text.get('format') or {})}, tokenizer "
          f"{dict(text.get('tokenizer') or {})}, {train.steps} steps of {train.batch_size}, "
          f"lr {train.learning_rate:g}")


def train_and_evaluate(config, workdir: str | os.PathLike) -> dict:
  """Trains (or resumes) the run of `config` in `workdir` (a local path or a `gs://` URL);
  returns the final evaluation."""
  workdir = paths.path(workdir)
  main = jax.process_index() == 0
  run = _Run(config, workdir)
  if main:
    workdir.mkdir(parents=True, exist_ok=True)
    _write_config(run.config, workdir)  # as run: with the data mode's changes (RF-CoT cuts)
  writer = writers.MetricWriter(workdir, enabled=main)
  progress = writers.Progress(run.train.steps, enabled=main)
  ckpt = checkpoint_lib.Checkpointer(workdir, keep=run.checkpoint.keep,
                                     keep_best=run.checkpoint.keep_best,
                                     async_save=run.checkpoint.async_save)
  try:
    with jax.set_mesh(run.mesh), stopping.StopRequests() as stops:
      return _train(run, ckpt, writer, progress, stops)
  except DivergedError as e:
    ckpt.wait()
    last = ckpt.latest_step()
    raise DivergedError(
        f"{e}; stopped without saving it. The last good checkpoint "
        f"({'none' if last is None else f'step {last}'}) in {ckpt.directory} is intact: lower "
        f"config.train.learning_rate (now {run.train.learning_rate}) or raise "
        f"config.train.warmup_steps, then rerun to resume from it") from None
  finally:
    ckpt.close()
    writer.close()


def _train(run: _Run, ckpt: checkpoint_lib.Checkpointer, writer: writers.MetricWriter,
           progress: writers.Progress, stops: stopping.StopRequests) -> dict:
  c = run.config
  total, log_every = run.train.steps, run.train.log_every
  eval_every, ckpt_every = run.eval.every, run.checkpoint.every
  latest = ckpt.latest_step()
  if latest is None:
    state, step, samples_seen, position = run.init_state(), 0, 0, 0
    if writer.truncate_after(0):  # a rerun whose first run saved no checkpoint
      writer.event("restart", step=0)
  else:
    state, meta = ckpt.restore(latest, run.spec.abstract, run.spec.shardings)
    step, samples_seen, position = latest, int(meta["samples_seen"]), int(meta["data"])
    writer.truncate_after(step)
    writer.event("resume", step=step)
    progress.print(f"resuming from the checkpoint of step {step} in {ckpt.directory}")
  params = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(nnx.state(
      nnx.merge(run.spec.graphdef, run.spec.abstract)[0], nnx.Param)))
  per_call = run.train.steps_per_call
  progress.print(f"model: {params:,} parameters; mesh {dict(run.mesh.shape)}; "
                 f"{per_call} step{'s' * (per_call > 1)} a call; data "
                 f"{dict(data_lib.describe(run.pipeline))}")
  progress.print(_recipe_line(c, run.train))

  fields = step_lib.fields_read(run.spec.feature_names)
  stacked = run.pipeline.settings.stacked_transfer
  stacked_fields = packing.stacked_names(fields) if stacked else None
  train_step = step_lib.make_train_step(
      run.spec.graphdef, run.spec.shardings, run.batch_sharding, run.replicated, run.schedule,
      rng_seed=c.seed if run.spec.needs_rng else None, wrt=run.wrt,
      compiler_options=run.train.compiler_options(jax.default_backend()),
      grad_shardings=run.spec.grad_shardings, microbatches=run.train.microbatches,
      stacked_fields=stacked_fields, leaves_of=state, steps_per_call=run.train.steps_per_call)
  eval_step = step_lib.make_eval_step(run.spec.graphdef, run.spec.shardings,
                                      run.batch_sharding, run.replicated, stacked_fields)
  # The few validation batches are made once, here in this process: grain workers would take
  # seconds to start (each imports the main module) for a fraction of a second of work.
  with run.pipeline.val_iterator(run.eval.validation_batches, run.batch_sharding,
                                 num_workers=0, fields=fields, stacked=stacked) as it:
    validation = [step_lib.device_batch(b) for b in it]
  results = None
  window = _Window()
  # The loop carries the state as its leaves (the step's `leaves_of`); `state` is rebuilt from
  # them where a checkpoint, an evaluation or the end needs it.
  treedef, leaves = jax.tree.structure(state), jax.tree.leaves(state)
  calls = 0
  # A run that had already finished starts no data workers.
  with (run.pipeline.train_iterator(run.batch_sharding, start_step=position, fields=fields,
                                    stacked=stacked, per_call=per_call) if step < total
        else contextlib.nullcontext()) as batches:
    while step < total:
      # Calls end on multiples of steps_per_call (a run resumed at another step realigns).
      taken = [window.data_wait.next(batches)
               for _ in range(min(per_call - step % per_call, total - step))]
      device = [step_lib.device_batch(b) for b in taken]
      leaves, metrics = train_step(leaves, tuple(device) if per_call > 1 else device[0])
      window.pending.append((step + 1, metrics))
      step += len(taken)
      new_samples = sum(int(b["num_samples"]) for b in taken)
      samples_seen += new_samples
      window.samples += new_samples
      calls += 1
      stop = stops.reached(calls)  # the same answer in every process
      eval_now = not stop and (step == total or (eval_every > 0 and step % eval_every == 0))
      log_now = step % log_every == 0 or step == total
      ckpt_now = stop or eval_now or step % ckpt_every == 0
      if log_now or ckpt_now:
        window.fetch()
      paused = time.perf_counter()  # writing, evaluating, saving: not training time
      if eval_now or ckpt_now:
        state = jax.tree.unflatten(treedef, leaves)
      if log_now:
        record, steps_per_s = window.record(step, samples_seen, batches.stats())
        writer.write(record)
        progress.log(record, steps_per_s)
      val_loss = _validation_loss(state, eval_step, validation) if eval_now else None
      if ckpt_now:  # before the evaluation's generation, which may run long
        ckpt.save(step, state, {"data": batches.state(), "samples_seen": samples_seen},
                  val_loss=val_loss)
      if stop or step == total:
        ckpt.wait()  # committed before the final evaluation, or the exit
      if stop:
        writer.event("stop", step=step, signal=stops.cause)
        raise stopping.Stopped(f"stopped by {stops.cause} at step {step}: checkpoint saved in "
                               f"{ckpt.directory}; rerun the same command to resume",
                               stops.exit_status)
      if eval_now:
        results = _evaluate(run, state, val_loss, step, samples_seen, writer, progress)
      window.paused += time.perf_counter() - paused
  state = jax.tree.unflatten(treedef, leaves)
  ckpt.wait()
  if results is None:  # the run had already finished: evaluate its final state again
    val_loss = _validation_loss(state, eval_step, validation)
    results = _evaluate(run, state, val_loss, step, samples_seen, writer, progress)
  message = run.mode.model.finish(run.spec.graphdef, state, c, run.workdir)  # every process
  if message:
    progress.print(message)
  return results


def _validation_loss(state, eval_step, validation) -> float:
  """The mean token loss over the validation batches."""
  sums = [eval_step(state, batch) for batch in validation]
  total, count = (float(sum(float(s[i]) for s in sums)) for i in (0, 1))
  return total / max(count, 1.0)


def _evaluate(run: _Run, state, val_loss: float, step: int, samples_seen: int,
              writer: writers.MetricWriter, progress: writers.Progress) -> dict:
  """The frozen-test-set evaluation; written and printed, with `val_loss`, by process 0."""
  start = time.perf_counter()
  results = run.evaluator.evaluate(run.spec.graphdef, state, report=progress.print)
  if jax.process_index() == 0:
    writer.scalars("eval", step, {"val_loss": val_loss, **results_lib.bucket_scalars(results)})
    message = f"evaluation at step {step}: validation loss {val_loss:.4f}"
    if results:
      meta = {"samples_seen": samples_seen, "val_loss": val_loss,
              "per_length": run.evaluator.per_length, "greedy": run.eval.greedy,
              "positions": run.eval.positions, **results_lib.skipped_meta(run.evaluator.skipped)}
      path = results_lib.write_results(run.workdir, step, results, meta)
      message += (f" ({time.perf_counter() - start:.1f} s); exact match / digit match / "
                  f"dlength by bucket, from {path}:\n{results_lib.format_table(results)}")
    writer.event("eval", step=step, val_loss=val_loss)
    progress.print(message)
  return results
