"""models.hf: Hugging Face Llama / Qwen2 checkpoints load into the decoder with transformers'
logits and greedy generations, in both config.json dialects and from sharded indexes, onto
device meshes block by block, and save back to files transformers loads."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from nupa_jax.evaluation import generate
from nupa_jax.models import hf
import llm_testing

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = 48
ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = {
    # family, rope, tied embeddings, config dialect, saved as a sharded index
    "llama": ("llama", None, False, "transformers5", False),
    "llama3_scaling": ("llama", llm_testing.LLAMA3, False, "transformers4", True),
    "qwen2": ("qwen2", llm_testing.LINEAR, True, "transformers5", False),
}


def _checkpoint(tmp_path, case):
  family, rope, tie, dialect, sharded = CASES[case]
  model = llm_testing.hf_model(family, VOCAB, rope, tie)
  model.save_pretrained(tmp_path, max_shard_size="20KB" if sharded else "1GB")
  assert (tmp_path / hf.INDEX_FILE).is_file() == sharded
  if dialect == "transformers4":
    llm_testing.to_transformers4_config(tmp_path)
  return model


@pytest.mark.parametrize("case", list(CASES))
def test_logits_generations_and_export_match_transformers(tmp_path, case):
  reference = _checkpoint(tmp_path / "hf", case)
  ours = hf.load_pretrained(tmp_path / "hf", dtype="float32")
  tokens = np.random.default_rng(0).integers(0, VOCAB, (2, 150)).astype(np.int32)
  expected = llm_testing.hf_logits(reference, tokens)
  got = llm_testing.logits(ours, tokens)
  np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
  if case == "llama":  # the default dtype: parameters and compute in bfloat16
    half = hf.load_pretrained(tmp_path / "hf")
    assert half.layers.attn.q.kernel.dtype == half.embed.table.dtype == np.dtype("bfloat16")
    np.testing.assert_allclose(llm_testing.logits(half, tokens), expected,
                               atol=0.03 * np.abs(expected).max())

  # Greedy decoding of prompts of three lengths in one batch, EOS = 1 (pad after it).
  prompts = [tokens[0, :5].tolist(), tokens[1, :9].tolist(), tokens[0, 20:22].tolist()]
  padded = np.zeros((3, 9), np.int32)
  for i, p in enumerate(prompts):
    padded[i, :len(p)] = p
  generated = np.asarray(generate.generate(ours, padded, [len(p) for p in prompts],
                                           max_new_tokens=12, eos_id=1, pad_id=0))
  for row, prompt in zip(generated, prompts):
    want = llm_testing.hf_greedy(reference, prompt, 12, eos=1)
    assert row[:len(want)].tolist() == want
    assert (row[len(want):] == 0).all()

  # Exported (sharded: small max_shard_bytes) and read back by transformers.
  hf.save_pretrained(ours, tmp_path / "out", max_shard_bytes=40_000)
  assert (tmp_path / "out" / hf.INDEX_FILE).is_file()
  exported = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out").eval()
  assert type(exported) is type(reference)
  np.testing.assert_allclose(llm_testing.hf_logits(exported, tokens), expected, rtol=1e-5,
                             atol=1e-5 * np.abs(expected).max())


def test_both_config_dialects_give_the_same_model():
  base = {"model_type": "llama", "vocab_size": 10, "hidden_size": 64, "intermediate_size": 96,
          "num_hidden_layers": 2, "num_attention_heads": 4, "rms_norm_eps": 1e-5}
  v4 = {**base, "rope_theta": 500000.0, "rope_scaling": {"type": "llama3", **{
      k: v for k, v in llm_testing.LLAMA3.items() if k != "rope_type"}}}
  v5 = {**base, "rope_parameters": {"rope_theta": 500000.0, **llm_testing.LLAMA3}}
  assert hf.model_config(v4) == hf.model_config(v5)
  config = hf.model_config(v5, dtype="float32")
  assert config["posenc"] == {"name": "rope", "theta": 500000.0, "scaling": llm_testing.LLAMA3}
  assert (config["kv_heads"], config["head_dim"], config["dtype"], config["param_dtype"]) == (
      4, 16, "float32", "float32")
  assert hf.rope_options(base) == {"name": "rope", "theta": 10000.0, "scaling": None}


@pytest.mark.parametrize("change, message", [
    ({"model_type": "mixtral"}, "unsupported model_type 'mixtral'; known: llama, qwen2"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "unsupported rope_type 'yarn'"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 4.0}}, "needs \\['low_freq_factor'"),
    ({"attention_bias": True}, "attention_bias=True"),
])
def test_unsupported_configs_are_refused_by_name(change, message):
  config = {"model_type": "llama", "vocab_size": 10, "hidden_size": 64,
            "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, **change}
  with pytest.raises(ValueError, match=message):
    hf.model_config(config)


def test_missing_and_unused_tensors_are_reported(tmp_path):
  from safetensors.numpy import load_file, save_file
  llm_testing.hf_model("llama", VOCAB).save_pretrained(tmp_path)
  tensors = load_file(tmp_path / hf.WEIGHTS_FILE)
  save_file({**tensors, "model.layers.0.self_attn.o_proj.bias": np.zeros(64, np.float32)},
            tmp_path / hf.WEIGHTS_FILE)
  with pytest.raises(ValueError, match="tensors the model does not use: .*o_proj.bias"):
    hf.load_pretrained(tmp_path, dtype="float32")
  del tensors["model.norm.weight"]
  save_file(tensors, tmp_path / hf.WEIGHTS_FILE)
  with pytest.raises(ValueError, match="no tensor 'model.norm.weight'"):
    hf.load_pretrained(tmp_path, dtype="float32")


_MESH_SCRIPT = """
import json, sys
import numpy as np
import jax
from flax import nnx
from nupa_jax import sharding
from nupa_jax.models import hf
blocks = []
read_block = hf._read_block
def counting(tensor, weight, shape, index):
  out = read_block(tensor, weight, shape, index)
  blocks.append((weight.name, out.size))
  return out
hf._read_block = counting
mesh = sharding.make_mesh({"data": 2, "fsdp": 2, "tensor": 2})
model = hf.load_pretrained(sys.argv[1], "float32", mesh)
state = nnx.state(model, nnx.Param)
want = sharding.state_shardings(state, mesh, sharding.DEFAULT_RULES)
specs = {"/".join(map(str, p)): [list(v.get_value().sharding.spec), list(w.get_value().spec)]
         for (p, v), (_, w) in zip(nnx.to_flat_state(state), nnx.to_flat_state(want))}
q = [size for name, size in blocks if name.endswith("q_proj.weight")]
with jax.set_mesh(mesh):
  logits = np.asarray(model(np.asarray(json.loads(sys.argv[2]), np.int32)))
print(json.dumps({"specs": specs, "q_blocks": q, "logits": logits.tolist()}))
"""


def test_weights_load_block_by_block_onto_a_mesh(tmp_path):
  reference = llm_testing.hf_model("qwen2", VOCAB, tie=True)
  reference.save_pretrained(tmp_path, max_shard_size="20KB")
  tokens = np.random.default_rng(1).integers(0, VOCAB, (4, 12))
  env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
         "JAX_PLATFORMS": "cpu"}
  result = subprocess.run(
      [sys.executable, "-c", _MESH_SCRIPT, str(tmp_path), json.dumps(tokens.tolist())],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  out = json.loads(result.stdout.splitlines()[-1])
  for path, (got, want) in out["specs"].items():
    assert got == want, path
  assert out["specs"]["layers/attn/q/kernel"][0] == [None, "fsdp", "tensor", None]
  # q kernel [layers, 64, 4 heads, 16] on fsdp 2 x tensor 2: each device's block of a layer
  # (32 x 2 x 16) is read alone, never the whole 64 x 64 matrix.
  assert out["q_blocks"] and set(out["q_blocks"]) == {32 * 2 * 16}
  expected = llm_testing.hf_logits(reference, tokens)
  np.testing.assert_allclose(np.asarray(out["logits"]), expected, rtol=1e-4,
                             atol=1e-4 * np.abs(expected).max())
