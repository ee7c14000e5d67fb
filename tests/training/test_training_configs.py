"""Config files: the argument parser, the fields tools rely on, every family's variants."""
import importlib

import pytest
from flax import nnx

from configs import common
from nupa_jax import data
from nupa_jax import models
from nupa_jax.data import settings
from nupa_jax.evaluation import settings as settings_lib
from nupa_jax.text import Encoder
from nupa_jax.text import formats as text_formats

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
  assert c.model.cudnn_segments == c.data.samples_per_row + 1 == 5  # each sample + padding


def test_mixed_family_budget_questions_and_the_paper_scoring():
  mixed = importlib.import_module("configs.mixed")
  default = mixed.get_config("size=100m")
  c = mixed.get_config("size=100m,samples=20000000,per_length=100,scoring=paper")
  assert c.train.steps == 78_125 and c.train.batch_size == 256  # 2x10^7 / 256
  assert c.eval.per_length == 100 and default.eval.per_length == 1000
  assert (c.eval.learned_digits_rule, c.eval.dlength_rule) == ("official", "total")
  assert (default.eval.learned_digits_rule, default.eval.dlength_rule) == ("prefix", "parts")
  assert default.train.steps == 312_500
  assert default.model.cudnn_segments == default.data.samples_per_row + 1 == 17
  assert (mixed.get_config("eval_every=0").eval.every, default.eval.every) == (0, 25_000)
  with pytest.raises(ValueError, match="unknown scoring 'llm'"):
    mixed.get_config("scoring=llm")


def _flat(tree: dict, prefix: str = "") -> dict:
  out = {}
  for key, value in tree.items():
    if isinstance(value, dict) and value:
      out.update(_flat(value, f"{prefix}{key}."))
    else:
      out[f"{prefix}{key}"] = value
  return out


@pytest.mark.parametrize("family", ["pe", "formats", "tokenizer", "beyond", "rfcot"])
def test_budget_arguments_change_the_budget_and_nothing_else(family):
  """A sweep names its budget as config arguments (common.BUDGET_ARGS); unset, the size's."""
  module = importlib.import_module(f"configs.{family}")
  default = _flat(module.get_config("size=100m").to_dict())
  budget = _flat(module.get_config(
      "size=100m,steps=3907,lr=1e-4,warmup=500,eval_every=0,per_length=200").to_dict())
  assert {k: budget[k] for k in budget if budget[k] != default[k]} == {
      "train.steps": 3907, "train.learning_rate": 1e-4, "train.warmup_steps": 500,
      "eval.every": 0, "eval.per_length": 200}
  assert (default["train.steps"], default["eval.every"]) == (312_500, 25_000)
  with pytest.raises(ValueError, match="steps, lr and per_length must be >= 0"):
    module.get_config("steps=-1")


def test_pe_family_objective_and_formats_family_test_lengths():
  pe = importlib.import_module("configs.pe")
  official = pe.get_config("objective=official").data
  assert (official.packing, official.loss_on_padding) == ("padded", True)
  answers = pe.get_config("").data
  assert (answers.packing, answers.loss_on_padding) == ("packed", False)
  with pytest.raises(ValueError, match="unknown objective 'labels'; known: answers, official"):
    pe.get_config("objective=labels")
  formats = importlib.import_module("configs.formats")
  assert tuple(formats.get_config("test=12").eval.digits) == (1, 12)
  assert tuple(formats.get_config("").eval.digits) == (1, 20)


def test_formats_family_hint_offset_reaches_the_text_format():
  formats = importlib.import_module("configs.formats")
  assert "hint_offset" not in formats.get_config("hints=true").text.format
  shifted = formats.get_config("hints=true,hint_offset=2").text.format
  assert text_formats.Format.from_config(shifted, max_hint=128).hint_offset == 2
  with pytest.raises(ValueError, match="hint_offset > 0 needs index_hints=True"):
    text_formats.Format.from_config(formats.get_config("hint_offset=2").text.format, max_hint=128)


def test_rfcot_family_rfft_arms_share_tasks_budget_and_test_cells():
  """tab:rfft_performance from scratch: the RF-CoT model and the direct-answer model train on
  the same four tasks for the same number of samples and are tested on the same lengths;
  only the answer (trace vs digits) and the text settings it needs differ."""
  rfcot = importlib.import_module("configs.rfcot")
  cot_arm = rfcot.get_config("tasks=rfft,samples=300000,per_length=50")
  direct = rfcot.get_config("tasks=rfft,samples=300000,per_length=50,answer=direct")
  plain = common.base(size="100m")
  assert dict(cot_arm.data.tasks) == dict(direct.data.tasks) == {
      "add_float": 1.0, "multiply_hard_frac": 1.0, "max_sci": 1.0, "mod_int": 1.0}
  assert cot_arm.data.task_digits == direct.data.task_digits
  assert cot_arm.train.steps == direct.train.steps == 1172  # ceil(300,000 / 256)
  assert tuple(cot_arm.eval.digits) == tuple(direct.eval.digits) == (1, 100)
  assert cot_arm.eval.per_length == direct.eval.per_length == 50
  assert cot_arm.text.tokenizer["name"] == "rfcot" and cot_arm.data.packing == "padded"
  assert direct.text.to_dict() == plain.text.to_dict()
  assert direct.data.packing == plain.data.packing == "packed"
  # A trace a row: each layer is recomputed in the backward pass (activations would not fit).
  assert (cot_arm.model.remat, direct.model.remat) == ("full", plain.model.remat)
  assert (cot_arm.train.microbatches, direct.train.microbatches) == (4, 1)
  # cuDNN attends within the trace and within its padding; the packed direct rows keep the mask.
  assert (cot_arm.model.cudnn_segments, direct.model.cudnn_segments) == (2, 0)
  # cells=table: both arms scored at the table's three lengths a task only.
  cells = {"add_float": (5, 7), "multiply_hard_frac": (2, 4), "max_sci": (38, 40),
           "mod_int": (6, 8)}
  for answer in ("rfcot", "direct"):
    config = rfcot.get_config(f"tasks=rfft,cells=table,answer={answer}")
    assert settings_lib.Eval.from_config(config).task_digits == cells
  assert settings_lib.Eval.from_config(cot_arm).task_digits == {}
  some = rfcot.get_config("tasks=max_sci+mod_int,cells=table")
  assert settings_lib.Eval.from_config(some).task_digits == {"max_sci": (38, 40),
                                                             "mod_int": (6, 8)}
  with pytest.raises(ValueError, match="add_int has none of: use tasks=rfft"):
    rfcot.get_config("tasks=add_int+mod_int,cells=table")
  with pytest.raises(ValueError, match="unknown answer 'trace'"):
    rfcot.get_config("answer=trace")
  with pytest.raises(ValueError, match="leave `model` at scratch"):
    rfcot.get_config("answer=direct,model=/ckpt/llama")
  # A short schedule's learning rate and warmup, the same for both arms.
  for answer in ("rfcot", "direct"):
    short = rfcot.get_config(f"tasks=rfft,samples=179200,lr=3e-4,warmup=70,answer={answer}")
    assert (short.train.steps, short.train.learning_rate, short.train.warmup_steps) == (
        700, 3e-4, 70)
  assert rfcot.get_config("per_length=0").eval.per_length == 0  # a run without test questions
  with pytest.raises(ValueError, match="`samples` or as `steps`, not both"):
    rfcot.get_config("samples=256,steps=1")
