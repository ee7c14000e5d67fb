"""Config files: the argument parser, the fields tools rely on, every family's variants."""
import importlib

import pytest
from flax import nnx

from configs import common
from nupa_jax import data
from nupa_jax import models
from nupa_jax.data import settings
from nupa_jax.text import Encoder

FAMILIES = {
    "pe": ["pe=nope,task=add_float", "pe=alibi,task=multiply_easy_frac", "pe=rope,task=add_sci",
           "pe=alibi_nupa"],
    "tokenizer": ["tok=2", "tok=3,align=left", "tok=random3,task=multiply_hard_int"],
    "formats": ["reverse=each,pad=true", "reverse=total,task=add_float",
                "hints=true,task=max_int", "pe=nope,reverse=int,pad=true"],
    "mixed": ["digits=8"],
    "beyond": ["pe=abacus", "pe=fire,hints=true", "pe=rope,reverse=none"],
}


def test_parse_arg_types_values_like_the_defaults():
  arg = common.parse_arg("pe=alibi,steps=7,lr=0.5,flag=true", pe="rope", steps=1, lr=1.0,
                         flag=False)
  assert (arg.pe, arg.steps, arg.lr, arg.flag) == ("alibi", 7, 0.5, True)
  assert common.parse_arg(None, pe="rope").pe == "rope"


@pytest.mark.parametrize("arg, message", [
    ("pee=rope", "unknown config argument 'pee'; known: pe, size"),
    ("pe", "not of the form key=value"),
    ("size=big,pe=rope", None),
])
def test_parse_arg_rejects_typos(arg, message):
  if message is None:  # a valid parse; the unknown size is caught by base()
    with pytest.raises(ValueError, match="unknown size 'big'; known: tiny"):
      common.base(common.parse_arg(arg, pe="rope", size="tiny").size)
    return
  with pytest.raises(ValueError, match=message):
    common.parse_arg(arg, pe="rope", size="tiny")


def test_parse_arg_rejects_a_badly_typed_value():
  with pytest.raises(ValueError, match="steps='many': expected int"):
    common.parse_arg("steps=many", steps=1)


def test_run_fields_exist_for_every_size():
  for size in common.SIZES:
    c = common.base(size)
    assert c.train.steps > 0 and c.train.log_every > 0 and c.checkpoint.every > 0
    assert c.eval.every >= 0 and c.eval.per_length > 0
    assert dict(c.mesh.shape) == {"data": -1, "fsdp": 1, "tensor": 1}
    assert dict(c.mesh.rules)["embed"] == "fsdp"
    assert c.init_from == ""
    models.resolve(c.model, 50)  # a complete model config
    assert set(c.data) == set(data.defaults())  # the pipeline's own fields


def test_paper_optimizer_settings():
  """A.4.1: AdamW, lr 5e-5, weight decay 0.01, batch 256 / 64 / 32 for 0.1B / 0.9B / 3B."""
  for size, batch in [("100m", 256), ("0.9b", 64), ("3b", 32)]:
    t = common.base(size).train
    assert (t.optimizer, t.learning_rate, t.weight_decay, t.batch_size, t.schedule) == (
        "adamw", 5e-5, 0.01, batch, "cosine")


def test_pe_default_is_the_papers_100m_rope_integer_addition():
  c = importlib.import_module("configs.pe").get_config()
  assert c.model.posenc.name == "rope" and dict(c.data.tasks) == {"add_int": 1.0}
  assert (c.model.hidden, c.model.num_layers) == (1024, 8)
  assert tuple(c.data.train_digits) == (1, 8) and tuple(c.eval.digits) == (1, 20)


@pytest.mark.parametrize("family, arg", [(f, a) for f, args in FAMILIES.items() for a in args])
def test_every_family_variant_builds_a_valid_text_and_model_config(family, arg):
  c = importlib.import_module(f"configs.{family}").get_config(arg + ",size=tiny")
  encoder = Encoder(tokenizer=c.text.tokenizer.to_dict(), format=c.text.format.to_dict())
  models.resolve(c.model, encoder.vocab_size)
  settings.Settings.from_config(c)  # tasks, digit ranges and batch layout resolve


def test_pe_family_alibi_nupa_is_alibi_with_the_official_codes_sign():
  pe = importlib.import_module("configs.pe")
  posenc = pe.get_config("pe=alibi_nupa,size=tiny").model.posenc.to_dict()
  assert posenc == {"name": "alibi", "reward_distance": True}
  config = models.resolve(pe.get_config("pe=alibi_nupa,size=tiny").model, 12)
  assert models.posenc.build(config, rngs=nnx.Rngs(0)).sign == 1.0


def test_formats_family_takes_the_pe_families_pe_names():
  formats = importlib.import_module("configs.formats")
  assert formats.get_config("size=tiny").model.posenc.to_dict() == {"name": "rope"}
  assert formats.get_config("pe=alibi_nupa,size=tiny").model.posenc.to_dict() == {
      "name": "alibi", "reward_distance": True}


def test_tokenizer_family_maps_its_argument():
  tokenizer = importlib.import_module("configs.tokenizer")
  assert tokenizer.get_config("tok=3,align=left").text.tokenizer.to_dict() == {
      "name": "digits", "k": 3, "align": "left"}
  assert tokenizer.get_config("tok=random2").text.tokenizer.to_dict() == {
      "name": "random", "max_k": 2}
  with pytest.raises(ValueError, match="unknown tokenizer '4'; known: 1, 2, 3, random2"):
    tokenizer.get_config("tok=4")


def test_mixed_family_trains_every_task_up_to_its_tier():
  c = importlib.import_module("configs.mixed").get_config("size=tiny")
  assert dict(c.data.tasks) == {"all": 1.0}
  assert tuple(c.data.train_digits) == (1, 20)
  assert tuple(c.data.task_digits["max_int"]) == (1, 100)
