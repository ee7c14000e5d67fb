"""The trainer's finetuning and RF-CoT modes end to end: a LoRA run of configs/finetune.py on a
tiny Llama checkpoint that trains the adapters only and exports a checkpoint transformers
reloads, an RF-CoT run of configs/rfcot.py that records its cut lengths, and the evaluator
leaving out test questions longer than an RF-CoT context."""
import collections
import json
import math

import jax
import numpy as np
import pytest
from flax import nnx

from configs import rfcot as rfcot_config
from nupa_jax import checkpoint as checkpoint_lib
from nupa_jax import rfcot
from nupa_jax import saved_run
from nupa_jax import sharding
from nupa_jax.benchmark import testset
from nupa_jax.evaluation import questions as questions_lib
from nupa_jax.llm import finetune
from nupa_jax.models import lora
from nupa_jax.training import trainer
import llm_testing
import test_llm_finetune

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

STEPS = 4
CONTEXT = 2048  # configs/rfcot.py default: char traces of add_int fit up to ~6 digits


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
  directory = tmp_path_factory.mktemp("llama")
  vocab = llm_testing.write_tokenizer(directory)
  eos = transformers.PreTrainedTokenizerFast.from_pretrained(directory).eos_token_id
  llm_testing.hf_model("llama", vocab + 16, eos=eos, pad=eos, seed=3).save_pretrained(directory)
  return directory


def _lines(path):
  return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_lora_run_trains_adapters_only_and_exports_a_transformers_checkpoint(checkpoint,
                                                                             tmp_path):
  config = test_llm_finetune.small_config(checkpoint)  # LoRA rank 4, add_int 1-4 digits
  config.train.steps = STEPS
  config.train.log_every = 1
  config.eval.every = 0
  config.eval.validation_batches = 1
  config.checkpoint.every = STEPS
  trainer.train_and_evaluate(config, tmp_path)

  losses = [r["loss"] for r in _lines(tmp_path / "train_metrics.jsonl") if "loss" in r]
  assert len(losses) == STEPS and all(map(math.isfinite, losses))
  assert losses[-1] < losses[0], losses

  # The last checkpoint: base weights are the checkpoint's, the adapters have moved (B != 0).
  spec = finetune.spec(config, sharding.make_mesh({"data": -1}))
  params, _ = checkpoint_lib.Checkpointer(tmp_path, read_only=True).restore_params(
      STEPS, spec.abstract, spec.shardings)
  start = finetune.initialise(spec, config)
  is_base = nnx.All(nnx.Param, nnx.Not(lora.LoRAParam))
  for a, b in zip(jax.tree.leaves(nnx.filter_state(start, is_base)),
                  jax.tree.leaves(nnx.filter_state(params, is_base)), strict=True):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  adapters = jax.tree.leaves(nnx.filter_state(params, lora.LoRAParam))
  assert adapters and any(np.abs(np.asarray(x) - np.asarray(y)).max() > 0 for x, y in zip(
      jax.tree.leaves(nnx.filter_state(start, lora.LoRAParam)), adapters))

  exported = transformers.AutoModelForCausalLM.from_pretrained(
      tmp_path / finetune.EXPORT_DIR).eval()
  tokens = np.random.default_rng(0).integers(0, exported.config.vocab_size, (2, 24))
  ours = llm_testing.logits(nnx.merge(spec.graphdef, params), tokens)
  np.testing.assert_allclose(llm_testing.hf_logits(exported, tokens), ours, rtol=1e-4,
                             atol=1e-4 * np.abs(ours).max())

  # The evaluator restores the adapted model from the run's checkpoint.
  step, results, _ = saved_run.evaluate_checkpoint(tmp_path, "latest", per_length=1)
  assert step == STEPS and results["add_int"]["S"]["n"] > 0


def test_rfcot_run_writes_the_cut_lengths_to_its_config(tmp_path):
  config = rfcot_config.get_config("size=tiny,tasks=add_int,per_length=0")
  config.model.update(num_layers=1, hidden=32, mlp=64, heads=4, kv_heads=2)
  config.train.update(steps=2, batch_size=2, microbatches=2, log_every=1, warmup_steps=1)
  config.data.exclude_test = False
  config.eval.update(validation_batches=1, batch_size=2)
  trainer.train_and_evaluate(config, tmp_path)

  encoder = rfcot.Encoder("char", CONTEXT)
  written = json.loads((tmp_path / trainer.CONFIG_FILE).read_text())
  lo, hi = written["data"]["task_digits"]["add_int"]
  assert lo == 1 and 1 < hi < 20  # cut: 20-digit traces take ~4600 positions
  question = lambda n: testset.questions("add_int", n, seed=0, per_length=1)[0]
  fits = lambda n: encoder.fits(encoder.encode("add_int", question(n).a, question(n).b,
                                               question(n).answer)[0])
  assert fits(3) and not fits(20)
  assert written["data"]["seq_len"] == CONTEXT and written["data"]["packing"] == "padded"
  losses = [r["loss"] for r in _lines(tmp_path / "train_metrics.jsonl") if "loss" in r]
  assert len(losses) == 2 and all(map(math.isfinite, losses))


def test_evaluation_leaves_out_and_counts_questions_over_the_context():
  encoder = rfcot.Encoder("char", CONTEXT)
  questions = {"add_int": [q for n in (3, 20)
                           for q in testset.questions("add_int", n, seed=0, per_length=2)]}
  too_long = sum(not encoder.fits(encoder.encode("add_int", q.a, q.b, q.answer)[0])
                 for q in questions["add_int"])
  assert too_long == 2  # the 20-digit ones
  skipped = collections.Counter()
  batches = questions_lib.make_batches(encoder, questions, rows=4, skipped=skipped)
  assert skipped == {"add_int": 2}
  assert [q.digits for b in batches for q in b.questions] == [3, 3]
