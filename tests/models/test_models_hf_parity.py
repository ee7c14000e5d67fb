"""The decoder equals Hugging Face's PyTorch LlamaForCausalLM given the same weights.

Needs torch and transformers (test extras, not in the main requirements); skipped without.
A tiny random Llama (GQA, untied head, random norm weights) is made here, its weights copied
into our stacked layout (`hf.load_params`, the checkpoint loader's mapping), and float32
logits compared. tests/llm covers whole checkpoints (files, Qwen2, generation, export).
"""
import numpy as np
import pytest
from flax import nnx

from nupa_jax import models
from nupa_jax.models import hf
import model_testing

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB, HIDDEN, MLP, HEADS, KV_HEADS, LAYERS = 40, 64, 96, 4, 2, 2
LLAMA3_SCALING = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 64}


def _hf_model(scaling):
  rope = {"rope_type": "llama3", **scaling} if scaling else {"rope_type": "default"}
  config = transformers.LlamaConfig(
      vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=MLP, num_hidden_layers=LAYERS,
      num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=256,
      rms_norm_eps=1e-5, tie_word_embeddings=False,
      rope_parameters={"rope_theta": 500000.0, **rope})
  torch.manual_seed(0)
  model = transformers.LlamaForCausalLM(config).eval()
  with torch.no_grad():
    for p in model.parameters():
      p.normal_(0.0, 0.15)   # norms too, so their weights are checked
  return model


def _copy_weights(reference, ours):
  """The reference's weights into our stacked layout, by the checkpoint loader's mapping."""
  tensors = {k: v.detach().numpy() for k, v in reference.state_dict().items()}
  nnx.update(ours, hf.load_params(tensors, nnx.state(ours)))


@pytest.mark.parametrize("knobs", [{}, {"fused_projections": True, "split_layers": True}],
                         ids=["default", "fused_split"])
@pytest.mark.parametrize("scaling", [None, LLAMA3_SCALING], ids=["rope", "llama3_scaling"])
def test_logits_match_hugging_face_llama(scaling, knobs):
  reference = _hf_model(scaling)
  ours = models.build({"num_layers": LAYERS, "hidden": HIDDEN, "mlp": MLP, "heads": HEADS,
                       "kv_heads": KV_HEADS, "dtype": "float32",
                       "posenc": {"name": "rope", "theta": 500000.0, "scaling": scaling},
                       **knobs}, VOCAB, rngs=nnx.Rngs(0))
  _copy_weights(reference, ours)
  tokens = np.random.default_rng(0).integers(0, VOCAB, (2, 150)).astype(np.int32)
  with torch.no_grad():
    expected = reference(torch.from_numpy(tokens).long()).logits.numpy()
  got = np.asarray(model_testing.forward(ours, tokens))
  np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5)
