"""The evaluator past the benchmark: which questions it adds, the extra bucket, the coupled-
position rule for generated tokens, and the start-up check of the PE's limits."""
import jax.numpy as jnp
import numpy as np
import pytest

from configs import beyond
from nupa_jax import metrics
from nupa_jax import sharding
from nupa_jax.benchmark import testset
from nupa_jax.evaluation import evaluator as evaluator_lib
from nupa_jax.evaluation import feature_rules
from nupa_jax.evaluation import questions as questions_lib
from nupa_jax.evaluation import results as results_lib
from nupa_jax.text import Encoder


def test_beyond_lengths_add_questions_past_each_tier_only(tmp_path):
  # max_int's tier is 100: lengths up to 100 come from `digits` (its test lengths), never twice.
  got = questions_lib.load_questions(["add_int", "max_int"], (3, 4), 2, seed=0,
                                     beyond=(4, 30, 21, 120))
  assert [q.digits for q in got["add_int"]] == [3, 3, 4, 4, 21, 21, 30, 30, 120, 120]
  assert [q.digits for q in got["max_int"]] == [120, 120]
  assert got["add_int"][4:6] == testset.questions("add_int", 21, seed=0, per_length=2)
  with open(tmp_path / "test.jsonl", "w") as f:  # a built test set: only the tier's lengths
    for q in testset.iter_test_set(["add_int"], seed=0, per_length=2):
      f.write(q.to_json() + "\n")
  from_files = questions_lib.load_questions(["add_int"], (3, 4), 2, seed=0,
                                            test_dir=str(tmp_path), beyond=(21,))
  assert from_files["add_int"] == got["add_int"][:6]
  with pytest.raises(ValueError, match=r"config.eval.beyond_digits: add_frac has questions of "
                                       r"1-20 digits .* leave add_frac out of config.eval.tasks"):
    questions_lib.load_questions(["add_frac"], (3, 4), 2, seed=0, beyond=(21,))


def test_summary_pools_lengths_past_the_tier_in_one_extra_bucket():
  def scores(em):
    return {"exact_match": em, "digit_match": em, "dlength": 1 - em}
  records = [(20, scores(1.0)), (20, scores(0.0)), (21, scores(1.0)), (100, scores(0.0)),
             (100, scores(0.0))]
  summary = metrics.summarize(records, 20)
  assert summary["XL"]["n"] == 2 and summary["XL"]["exact_match"] == 0.5
  assert summary[metrics.BEYOND]["n"] == 3 and summary[metrics.BEYOND]["exact_match"] == 1 / 3
  assert summary["well_learned_digits"]["exact_match"] == 0  # 20 digits fail 0.9 already
  assert metrics.BEYOND not in metrics.summarize(records[:2], 20)  # in-tier layout unchanged
  with pytest.raises(ValueError, match="outside 1..20"):
    metrics.bucket(21, 20)  # strict unless asked
  table = results_lib.format_table({"add_int": summary})
  header, _, row = table.splitlines()
  assert "beyond EM/DM/dlen" in header and "0.333/0.333/0.67" in row
  scalars = results_lib.bucket_scalars({"add_int": summary})
  assert scalars["add_int/beyond/exact_match"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("reverse", ["int", "each", "total"])
def test_coupled_rule_continues_the_text_layers_significance(reverse):
  """Generated answer tokens get the significance the encoder gives the whole sample."""
  encoder = Encoder(format={"reverse": reverse})
  rule = feature_rules.FEATURE_RULES["significance"](encoder, {"reverse": reverse}, {"int"})
  questions = [q for length in (1, 7, 30) for q in testset.questions("add_int", length, 0, 3)]
  prompts, fulls = [], []
  for q in questions:
    prompts.append(encoder.encode("add_int", q.a, q.b, None)[0])
    fulls.append(encoder.encode("add_int", q.a, q.b, q.answer)[0])
  previous = {"significance": jnp.array(
      [encoder.positions("add_int", p)["significance"][-1] for p in prompts])}
  steps = max(len(f) - len(p) for f, p in zip(fulls, prompts))
  generated = np.full((len(questions), steps), encoder.pad_id)
  expected = np.zeros((len(questions), steps), np.int32)
  for i, (p, f) in enumerate(zip(prompts, fulls)):
    generated[i, :len(f) - len(p)] = f[len(p):]
    expected[i, :len(f) - len(p)] = encoder.positions("add_int", f)["significance"][len(p):]
  got = []
  for t in range(steps):
    previous = rule(previous, jnp.asarray(generated[:, t]))
    got.append(np.asarray(previous["significance"]))
  np.testing.assert_array_equal(np.stack(got, axis=1), expected)


@pytest.mark.parametrize("tokenizer, text_format, answers", [
    ({"name": "digits", "k": 2}, {"reverse": "int"}, {"int"}),
    ({"name": "digits"}, {"reverse": "int"}, {"int", "float"}),
    ({"name": "digits"}, {"reverse": "dec"}, {"int"}),
    ({"name": "digits"}, {"reverse": "int", "index_hints": True}, {"int"}),
])
def test_coupled_rule_is_refused_where_answers_are_not_causal(tokenizer, text_format, answers):
  encoder = Encoder(tokenizer=tokenizer, format=text_format)
  with pytest.raises(ValueError, match="only for integer answers written units first"):
    feature_rules.FEATURE_RULES["significance"](encoder, text_format, answers)


def _beyond_evaluator(pe: str, **options):
  config = beyond.get_config(f"pe={pe},size=tiny,test=30,stride=9")
  config.model.posenc = {**config.model.posenc, **options}
  config.eval.per_length = 2
  config.eval.batch_size = 8
  encoder = Encoder(tokenizer=config.text.tokenizer.to_dict(), format=config.text.format.to_dict())
  mesh = sharding.make_mesh({"data": -1})
  feature_names = {"abacus": {"digit_index"}, "coupled": {"significance"}}.get(pe, set())
  return lambda: evaluator_lib.Evaluator(config, encoder, mesh, feature_names)


def _longest(questions):
  """Digits of the longest number, and the last input position of the longest sample
  ([BOS] a <task> b = answer [EOS], one token per digit), counted from the strings."""
  numbers = max(len(x) for q in questions for x in (q.a, q.b, q.answer))
  position = max(len(q.a) + len(q.b) + len(q.answer) + 4 for q in questions) - 2
  return numbers, position


def test_position_limits_are_checked_against_the_longest_evaluated_sample():
  evaluator = _beyond_evaluator("abacus")()  # defaults cover 100 digits; here 30
  questions = [q for qs in evaluator.questions.values() for q in qs]
  assert max(q.digits for q in questions) == 30
  numbers, position = _longest(questions)
  cases = [
      (_beyond_evaluator("abacus", max_digits=numbers - 1), f"max_digits >= {numbers}"),
      (_beyond_evaluator("absolute", max_len=position), f"max_len >= {position}"),
      (_beyond_evaluator("rope", random_positions=position), f"random_positions >= {position}"),
  ]
  for build, fix in cases:
    with pytest.raises(ValueError, match=rf"evaluation \(questions up to 30 digits\) reaches "
                                         rf"\d+: set config.model.posenc.{fix}"):
      build()
  _beyond_evaluator("abacus", max_digits=numbers)()  # exactly enough
  _beyond_evaluator("absolute", max_len=position + 1)()
  # Coupled ids: 256 + the power of ten; the longest answer's top digit is 10^(numbers - 1).
  with pytest.raises(ValueError, match=f"max_significance >= {255 + numbers}"):
    _beyond_evaluator("coupled", max_significance=254 + numbers)()
