"""Text layer: how numbers are cut into tokens and written for a model, and back.

`Encoder` is the entry point for the data pipeline and the evaluator; `formats` (how numbers
are written), `tokenizer` (how they are cut into tokens) and `positions` (per-token features
for positional schemes) are the pieces it combines. `SampleEncoder` (interface.py) is what the
pipeline and the evaluator need of any run's encoder; `mode` registers digit text as a run mode;
`hf_tokenizer` reads a Hugging Face tokenizer.json (RF-CoT and pretrained runs).
"""
from nupa_jax.text import mode
from nupa_jax.text.encoder import Encoder
from nupa_jax.text.interface import SampleEncoder
from nupa_jax.text.positions import MAX_SIGNIFICANCE, SIGNIFICANCE_UNITS

__all__ = ["Encoder", "MAX_SIGNIFICANCE", "SIGNIFICANCE_UNITS", "SampleEncoder", "mode"]
