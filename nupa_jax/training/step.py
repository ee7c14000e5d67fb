"""Pure training and evaluation steps, jitted with explicit shardings.

The model and optimizer are split once into a static graphdef and a state pytree; each step
merges them inside `jax.jit` and returns the new state (docs/design.md), so the state can be
donated and every leaf keeps the sharding it was created with. The loss is the mean token
cross-entropy over the answer tokens (and EOS) of the whole global batch: the same number
whatever the mesh, which is what the sharding-equivalence test checks.
"""
from __future__ import annotations

from collections.abc import Callable, Collection

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from nupa_jax.data import packing

# Batch fields (interfaces.md) the model consumes besides `inputs`.
MODEL_INPUTS = ("positions", "segment_ids", "digit_index", "significance")
ARRAY_FIELDS = ("inputs", "targets", "loss_mask") + MODEL_INPUTS


def fields_read(feature_names: Collection[str]) -> tuple[str, ...]:
  """The batch fields a step of a model reads: tokens, targets, loss mask, positions, segment
  ids, and of the per-token features only those its positional encoding reads
  (`StateSpec.feature_names`). Only these need to be placed on the devices."""
  features = set(MODEL_INPUTS) - {"positions", "segment_ids"}
  return tuple(f for f in ARRAY_FIELDS if f not in features or f in feature_names)


def device_batch(batch: dict) -> dict:
  """The array fields of a data batch, or their stacked array (drops host-side counters such
  as `num_samples`)."""
  return {k: batch[k] for k in (*ARRAY_FIELDS, packing.STACKED) if k in batch}


def _taken_apart(batch: dict, stacked_fields: tuple[str, ...] | None) -> dict:
  """The batch's fields: as given, or out of the one array they were placed as
  (`config.data.stacked_transfer`), named `stacked_fields` in stacking order."""
  if stacked_fields is None:
    return batch
  return packing.unstack_fields(batch[packing.STACKED], stacked_fields)


def loss_sums(model, batch: dict, *, rng: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
  """(sum of answer-token cross-entropies, number of answer tokens) over the batch.

  With `rng` the model runs in training mode (its positional randomisation and dropout draw
  from it); without, deterministically.
  """
  kwargs = {k: batch[k] for k in MODEL_INPUTS if k in batch}
  logits = model(batch["inputs"], deterministic=rng is None, rng=rng, **kwargs)
  nll = optax.softmax_cross_entropy_with_integer_labels(logits.astype(jnp.float32),
                                                        batch["targets"])
  mask = batch["loss_mask"].astype(jnp.float32)
  return jnp.sum(nll * mask), jnp.sum(mask)


def _mean_loss(model, batch, rng):
  total, count = loss_sums(model, batch, rng=rng)
  return total / jnp.maximum(count, 1.0), count


def microbatches_of(batch: dict, k: int) -> dict:
  """The batch's rows dealt into `k` microbatches, [k, rows / k, ...]: microbatch i holds rows
  i, i + k, i + 2k, ..., so each keeps an equal share of every device's rows (a row-sharded
  batch splits without moving data)."""
  return jax.tree.map(lambda a: a.reshape(a.shape[0] // k, k, *a.shape[1:]).swapaxes(0, 1),
                      batch)


def _loss_and_grads(model, batch: dict, rng, wrt, k: int, grad_shardings=None):
  """(mean loss, answer tokens, gradients) of the whole batch. With k > 1 microbatches run one
  after another in a scan and their summed losses and gradients are added up, in float32,
  before the one division by the batch's answer tokens: the same gradient, up to float
  rounding, with the activations of one microbatch at a time. (Microbatch i's random draws,
  where the model makes any, come from `fold_in(rng, i)`, so such a model's run differs from
  its k = 1 run.) The gradients are reduced to `grad_shardings` (None: left as the
  parameters), each microbatch's as it comes, so the running sum is split like the optimizer
  state."""
  constrain = (lambda tree: tree) if grad_shardings is None else (
      lambda tree: jax.lax.with_sharding_constraint(tree, grad_shardings))
  if k == 1:
    grad_fn = nnx.value_and_grad(_mean_loss, argnums=nnx.DiffState(0, wrt), has_aux=True)
    (loss, count), grads = grad_fn(model, batch, rng)
    return loss, count, constrain(grads)
  graphdef, params, rest = nnx.split(model, wrt, ...)

  def summed(params, part, part_rng):
    return loss_sums(nnx.merge(graphdef, params, rest), part, rng=part_rng)

  sum_and_grads = jax.value_and_grad(summed, has_aux=True)

  def body(carry, xs):
    total, count, grads = carry
    part, i = xs
    part_rng = None if rng is None else jax.random.fold_in(rng, i)
    (part_total, part_count), part_grads = sum_and_grads(params, part, part_rng)
    grads = jax.tree.map(lambda g, p: g + p.astype(jnp.float32), grads, constrain(part_grads))
    return (total + part_total, count + part_count, grads), None

  zeros = constrain(jax.tree.map(lambda p: jnp.zeros(p.shape, jnp.float32), params))
  (total, count, grads), _ = jax.lax.scan(
      body, (jnp.float32(0), jnp.float32(0), zeros), (microbatches_of(batch, k), jnp.arange(k)))
  scale = 1.0 / jnp.maximum(count, 1.0)
  return total * scale, count, jax.tree.map(lambda g, p: (g * scale).astype(p.dtype), grads,
                                            params)


def _one_after_another(step: Callable) -> Callable:
  """`step(state, batch) -> (state, metrics)` over a tuple of batches in one program, the
  state carried from each to the next: `(state, batches) -> (state, metrics)`, each metric
  stacked over the batches."""

  def steps(state, batches):
    return jax.lax.scan(step, state, jax.tree.map(lambda *a: jnp.stack(a), *batches))

  return steps


def _over_leaves(step: Callable, treedef) -> Callable:
  """`step(state, batch) -> (state, metrics)` as a function of the state's leaves
  (`treedef`'s): `(leaves, batch) -> (leaves, metrics)`."""

  def leaf_step(leaves, batch):
    state, metrics = step(jax.tree.unflatten(treedef, leaves), batch)
    return jax.tree.leaves(state), metrics

  return leaf_step


def make_train_step(graphdef, state_shardings, batch_sharding, replicated,
                    schedule: Callable[[jax.Array], jax.Array], *, rng_seed: int | None = None,
                    wrt: nnx.filterlib.Filter = nnx.Param, compiler_options: dict | None = None,
                    grad_shardings=None, microbatches: int = 1,
                    stacked_fields: tuple[str, ...] | None = None, leaves_of=None,
                    steps_per_call: int = 1):
  """`train_step(state, batch) -> (state, metrics)`, the state donated.

  `wrt`: the variables differentiated and updated, the optimizer's own `wrt` (LoRA adapters
  for a LoRA finetuning run, `llm.finetune.trainable`); the others stay frozen.

  `rng_seed`: for models whose training pass is random (StateSpec.needs_rng); step s draws
  from `fold_in(key(rng_seed), s)`, so a resumed run repeats the same draws.
  metrics: loss, grad_norm (before clipping), learning_rate (used by this step), tokens
  (non-padding tokens), answer_tokens. `compiler_options`: XLA options of the step's program
  (`Train.compiler_options`). `grad_shardings` (`StateSpec.grad_shardings`): where the
  gradients are reduced to, the optimizer state's split over `data` (a reduce-scatter instead
  of an all-reduce); None leaves them as the parameters. `microbatches`
  (`Train.microbatches`): the batch's rows taken in that many parts, one after another.
  `stacked_fields`: the batch is one stacked array of these fields (`packing.stack_fields`,
  in `packing.stacked_names` order), taken apart inside the step. `leaves_of`: a state of
  the step's structure; the step then takes and returns the list of its leaves,
  `step(leaves, batch) -> (leaves, metrics)`, the same program: calling it walks no nnx
  state tree in Python, host time the training loop spends on every step
  (`benchmarks/benchmark_dispatch.py`), which a multi-GPU step of a small model notices.
  `steps_per_call` (`Train.steps_per_call`) > 1: the step takes a tuple of 1 to that many
  batches and runs one step on each, in order, in one program (a scan; one compile per tuple
  length), returning each metric stacked over them: the host's cost of a call (handing every
  device its buffers, launching the program) is paid once for those steps.
  """

  def train_step(state, batch):
    batch = _taken_apart(batch, stacked_fields)
    model, optimizer = nnx.merge(graphdef, state)
    step = optimizer.step[...]
    lr = schedule(step)
    rng = None if rng_seed is None else jax.random.fold_in(jax.random.key(rng_seed), step)
    loss, answer_tokens, grads = _loss_and_grads(model, batch, rng, wrt, microbatches,
                                                 grad_shardings)
    optimizer.update(model, grads)
    metrics = {
        "loss": loss,
        "grad_norm": optax.tree.norm(grads),
        "learning_rate": lr,
        "tokens": jnp.sum(batch["segment_ids"] > 0) if "segment_ids" in batch
                  else jnp.asarray(batch["inputs"].size),
        "answer_tokens": answer_tokens,
    }
    return nnx.state((model, optimizer)), metrics

  if steps_per_call > 1:
    train_step = _one_after_another(train_step)
  if leaves_of is not None:
    train_step = _over_leaves(train_step, jax.tree.structure(leaves_of))
    state_shardings = jax.tree.leaves(state_shardings)
  return jax.jit(train_step, in_shardings=(state_shardings, batch_sharding),
                 out_shardings=(state_shardings, replicated), donate_argnums=0,
                 compiler_options=compiler_options or None)


def make_eval_step(graphdef, state_shardings, batch_sharding, replicated,
                   stacked_fields: tuple[str, ...] | None = None):
  """`eval_step(state, batch) -> (loss_sum, answer_token_count)`, deterministic;
  `stacked_fields` as for `make_train_step`."""

  def eval_step(state, batch):
    model, _ = nnx.merge(graphdef, state)
    return loss_sums(model, _taken_apart(batch, stacked_fields))

  return jax.jit(eval_step, in_shardings=(state_shardings, batch_sharding),
                 out_shardings=replicated)
