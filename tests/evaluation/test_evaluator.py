"""The evaluator: the frozen questions it asks, its prompt batches, its scoring (with an oracle
decoder standing in for the model), the JSON layout and the printed table."""
import collections
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from configs import common
from nupa_jax import models
from nupa_jax import sharding
from nupa_jax import tasks
from nupa_jax.benchmark import scoring
from nupa_jax.benchmark import testset
from nupa_jax.evaluation import evaluator as evaluator_lib
from nupa_jax.evaluation import generate as generate_lib
from nupa_jax.evaluation import positions as positions_lib
from nupa_jax.evaluation import questions as questions_lib
from nupa_jax.evaluation import results as results_lib
from nupa_jax.evaluation import settings as settings_lib
from nupa_jax.report import answers as answers_lib
from nupa_jax.text import Encoder

TASKS = ["add_int", "max_int"]  # a 20-digit and a 100-digit tier task
DIGITS = (1, 12)
PER_LENGTH = 3


@pytest.fixture(scope="module")
def encoder():
  return Encoder()


def eval_config():
  config = common.base("tiny")
  config.text.format.reverse = "none"  # the plain text of the `encoder` fixture
  config.data.tasks = {name: 1.0 for name in TASKS}
  config.eval.digits = DIGITS
  config.eval.per_length = PER_LENGTH
  config.eval.batch_size = 8
  return config


def test_questions_are_the_frozen_test_set_in_memory_or_from_files(tmp_path):
  expected_lengths = {t: [d for d in tasks.get(t).test_digits if d <= 12] for t in TASKS}
  assert expected_lengths["add_int"] == list(range(3, 13))  # add_int's test set starts at 3
  in_memory = questions_lib.load_questions(TASKS, DIGITS, PER_LENGTH, seed=0)
  for task in TASKS:
    reference = [q for d in expected_lengths[task]
                 for q in testset.questions(task, d, seed=0, per_length=PER_LENGTH)]
    assert in_memory[task] == reference
  # A built test set with more questions per length than asked: the first ones are used.
  with open(tmp_path / "test.jsonl", "w") as f:
    for q in testset.iter_test_set(TASKS, seed=0, per_length=PER_LENGTH + 2):
      f.write(q.to_json() + "\n")
  from_files = questions_lib.load_questions(TASKS, DIGITS, PER_LENGTH, seed=0,
                                            test_dir=str(tmp_path))
  assert from_files == in_memory


def test_task_digits_give_a_task_its_own_lengths(tmp_path):
  got = questions_lib.load_questions(["add_int", "max_int"], (3, 12), 2, seed=0,
                                     task_digits={"max_int": (38, 40)})
  with open(tmp_path / "test.jsonl", "w") as f:  # a built test set gives the same questions
    for q in testset.iter_test_set(["add_int", "max_int"], seed=0, per_length=3):
      f.write(q.to_json() + "\n")
  assert questions_lib.load_questions(["add_int", "max_int"], (3, 12), 2, seed=0,
                                      test_dir=str(tmp_path),
                                      task_digits={"max_int": (38, 40)}) == got
  assert sorted({q.digits for q in got["add_int"]}) == list(range(3, 13))
  assert [q.digits for q in got["max_int"]] == [38, 38, 39, 39, 40, 40]
  assert got["max_int"] == [q for d in (38, 39, 40)
                            for q in testset.questions("max_int", d, seed=0, per_length=2)]
  with pytest.raises(ValueError, match="unknown task 'max_integer'"):
    settings_lib.Eval(task_digits={"max_integer": (1, 2)})
  for bad in ((5, 3), "38", 5, (38.5, 40), (0, 2)):
    with pytest.raises(ValueError, match=r"task_digits\['max_int'\] must be \(lo, hi\)"):
      settings_lib.Eval(task_digits={"max_int": bad})
  assert settings_lib.Eval(task_digits={"max_int": [38, 40]}).task_digits == {
      "max_int": (38, 40)}  # from a config.json: a list


def test_batches_hold_right_padded_prompts_of_one_task(encoder):
  questions = questions_lib.load_questions(["add_int"], (3, 5), 3, seed=0)
  batches = questions_lib.make_batches(encoder, questions, rows=4)
  assert [len(b.questions) for b in batches] == [4, 4, 1]  # 9 questions in rows of 4
  for batch in batches:
    assert batch.prompts.shape[0] == 4 and batch.prompts.shape[1] % 8 == 0
    for i in range(4):
      q = batch.questions[i % len(batch.questions)]  # spare rows repeat the batch's questions
      prompt, _ = encoder.encode("add_int", q.a, q.b, None)
      assert batch.lengths[i] == len(prompt)
      assert list(batch.prompts[i, :len(prompt)]) == list(prompt)
      assert (batch.prompts[i, len(prompt):] == encoder.pad_id).all()
      full, _ = encoder.encode("add_int", q.a, q.b, q.answer)
      assert batch.max_new_tokens >= len(full) - len(prompt) + questions_lib.MARGIN


def oracle(encoder, questions, transform):
  """A stand-in for generate: answers each prompt with `transform(true answer)`, encoded."""
  answers = {}
  for task, qs in questions.items():
    for q in qs:
      prompt, _ = encoder.encode(task, q.a, q.b, None)
      full, _ = encoder.encode(task, q.a, q.b, transform(q.answer))
      answers[tuple(prompt)] = full[len(prompt):]

  def generate(model, prompts, lengths, *, max_new_tokens, pad_id, **unused):
    del model, unused
    out = np.full((prompts.shape[0], max_new_tokens), pad_id, np.int32)
    for i, (row, n) in enumerate(zip(np.asarray(prompts), np.asarray(lengths))):
      answer = answers[tuple(row[:n])]
      out[i, :len(answer)] = answer
    return jnp.asarray(out)

  return generate


def use_oracle(monkeypatch, encoder, questions, transform):
  """The evaluator generates with `oracle` and compiles nothing."""
  monkeypatch.setattr(evaluator_lib.generate_lib, "generate",
                      oracle(encoder, questions, transform))
  monkeypatch.setattr(evaluator_lib.generate_lib, "precompile", lambda *args, **kwargs: None)


@pytest.mark.parametrize("transform, em, dlength", [
    (lambda answer: answer, 1.0, 0.0),
    (lambda answer: answer[:-1], 0.0, 1.0),  # one digit short (answers here have >= 3)
])
def test_scores_of_an_oracle_follow_the_metrics(monkeypatch, encoder, transform, em, dlength):
  config = eval_config()
  mesh = sharding.make_mesh(config.mesh.shape)
  evaluator = evaluator_lib.Evaluator(config, encoder, mesh)
  use_oracle(monkeypatch, encoder, evaluator.questions, transform)
  graphdef, state = nnx.split(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
  results = evaluator.evaluate(graphdef, state)
  assert sorted(results) == sorted(TASKS)
  lengths = {"add_int": range(3, 13), "max_int": range(5, 13)}
  for task, summary in results.items():
    assert sorted(map(int, summary["per_digit"])) == list(lengths[task])
    total = sum(summary[b]["n"] for b in ("S", "M", "L", "XL"))
    assert total == PER_LENGTH * len(lengths[task])
    for s in summary["per_digit"].values():
      assert (s["exact_match"], s["dlength"]) == (em, dlength)
  assert results["max_int"]["S"]["n"] == PER_LENGTH * 6  # 5..10 digits: the 100-digit tier's S
  assert results["add_int"]["L"]["n"] == PER_LENGTH * 4  # 9..12 digits


def test_predictions_hold_each_answer_as_scored(monkeypatch, encoder):
  """Every question once, in batch order, with the oracle's answer (the true one, its last digit
  dropped where it is even) and its scores worked out by hand: right-aligned digits."""
  config = eval_config()
  evaluator = evaluator_lib.Evaluator(config, encoder, sharding.make_mesh(config.mesh.shape))
  short = lambda answer: int(answer) % 2 == 0
  use_oracle(monkeypatch, encoder, evaluator.questions,
             lambda answer: answer[:-1] if short(answer) else answer)
  graphdef, state = nnx.split(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
  records = []
  summary = evaluator.evaluate(graphdef, state, predictions=records)
  assert summary == evaluator.evaluate(graphdef, state)  # asking for answers changes nothing
  questions = {q.id: q for b in evaluator.batches for q in b.questions}
  assert [r["id"] for r in records] == list(questions)
  assert {short(q.answer) for q in questions.values()} == {True, False}
  for record in records:
    q = questions[record["id"]]
    assert (record["task"], record["digits"], record["a"], record["b"], record["answer"]) == (
        q.task, q.digits, q.a, q.b, q.answer)
    predicted = q.answer[:-1] if short(q.answer) else q.answer
    matching = sum(t == p for t, p in zip(q.answer[::-1], predicted[::-1]))
    assert record["prediction"] == predicted
    assert (record["exact_match"], record["digit_match"], record["dlength"]) == (
        float(predicted == q.answer), matching / len(q.answer), len(q.answer) - len(predicted))
  assert {r["id"]: answers_lib.kind(r) for r in records} == {
      q.id: "wrong_length" if short(q.answer) else "right" for q in questions.values()}
  # The file is a predictions file of `benchmark score`, which scores it as the evaluator did.
  report = scoring.score_predictions(questions.values(),
                                     {r["id"]: r["prediction"] for r in records})
  for task, task_summary in summary.items():
    assert report[task]["per_digit"] == task_summary["per_digit"]


def test_batches_are_capped_by_the_questions_and_progress_is_reported(monkeypatch, encoder):
  config = eval_config()
  config.eval.batch_size = 256  # more than the 30 add_int and 24 max_int questions
  mesh = sharding.make_mesh(config.mesh.shape)
  evaluator = evaluator_lib.Evaluator(config, encoder, mesh)
  assert evaluator.rows == 30  # 3 per length of 3..12 digits: the most of one task
  assert [b.prompts.shape[0] for b in evaluator.batches] == [30, 30]
  assert [len(b.questions) for b in evaluator.batches] == [30, 24]
  use_oracle(monkeypatch, encoder, evaluator.questions, lambda answer: answer)
  monkeypatch.setattr(evaluator_lib, "PROGRESS_EVERY_S", 0.0)
  lines = []
  graphdef, state = nnx.split(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
  evaluator.evaluate(graphdef, state, report=lines.append)
  assert lines[0] == "evaluating 54 questions of 2 tasks in 2 batches of 30 prompts"
  assert lines[1] == "compiling 1 generation program"  # both batches have one shape
  assert len(lines) == 3 and lines[2].startswith("evaluation: batch 1/2 (add_int), ")


def test_results_files_and_table(tmp_path):
  summary = {"per_digit": {3: {"exact_match": 1.0, "digit_match": 1.0, "dlength": 0.0, "n": 2}},
             "S": {"exact_match": 1.0, "digit_match": 1.0, "dlength": 0.0, "n": 2},
             "M": {"exact_match": None, "digit_match": None, "dlength": None, "n": 0},
             "L": {"exact_match": None, "digit_match": None, "dlength": None, "n": 0},
             "XL": {"exact_match": None, "digit_match": None, "dlength": None, "n": 0},
             "well_learned_digits": {"exact_match": 3}, "performance_preserving_digits": {}}
  path = results_lib.write_results(tmp_path, 40, {"add_int": summary}, {"samples_seen": 640})
  assert path == tmp_path / "eval" / "step_40.json"
  written = json.loads(path.read_text())
  assert written == json.loads((tmp_path / "eval" / "latest.json").read_text())
  assert written["_meta"] == {"samples_seen": 640, "step": 40}
  assert written["add_int"]["S"]["exact_match"] == 1.0
  table = results_lib.format_table({"add_int": summary})
  row = table.splitlines()[2]
  assert row.startswith("add_int") and "1.000/1.000/0.00" in row and row.count("-") == 3
  assert results_lib.bucket_scalars({"add_int": summary}) == {
      "add_int/S/exact_match": 1.0, "add_int/S/digit_match": 1.0, "add_int/S/dlength": 0.0}
  # Answers go beside a results file; with several processes, one file each.
  evaluation = tmp_path / "eval" / "evaluations" / "step_40_greedy_2q.json"
  assert results_lib.predictions_path(evaluation) == evaluation.with_name(
      "step_40_greedy_2q.predictions.jsonl")
  assert results_lib.predictions_path(evaluation, 1, 4).name == (
      "step_40_greedy_2q.predictions.process-1.jsonl")
  results_lib.write_predictions(results_lib.predictions_path(evaluation),
                                [{"id": "a"}, {"id": "b"}])
  assert evaluation.with_name("step_40_greedy_2q.predictions.jsonl").read_text() == (
      '{"id": "a"}\n{"id": "b"}\n')


def test_pe_features_of_generated_tokens(encoder):
  """Abacus digit indices continue through generated digits; what has no rule is refused."""
  config, mesh = eval_config(), sharding.make_mesh({"data": -1})
  config.eval.per_length = 0
  abacus = evaluator_lib.Evaluator(config, encoder, mesh, feature_names={"digit_index"})
  rule = abacus.next_features
  previous = {"digit_index": jnp.array([2, 0, 3])}
  tokens = jnp.array([encoder.tokens.index("7"), encoder.tokens.index("4"), encoder.eos_id])
  assert rule(previous, tokens)["digit_index"].tolist() == [3, 1, 0]
  with pytest.raises(ValueError, match=r"reads \['significance'\] needs a rule"):
    evaluator_lib.Evaluator(config, encoder, mesh, feature_names={"significance"})
  config.text.format.index_hints = True
  with pytest.raises(ValueError, match="without index hints"):
    evaluator_lib.Evaluator(config, encoder, mesh, feature_names={"digit_index"})


@pytest.mark.parametrize("rule, well_learned", [("prefix", 3), ("official", 12)])
def test_the_configured_learned_digits_rule_summarizes(monkeypatch, encoder, rule, well_learned):
  """Answers of 5 or 6 characters come back wrong, so integer addition fails at 4 digits
  (sums with a carry), 5 and 6, and passes again later: the prefix rule stops at 3, the
  official rule takes the longest length that passes (12)."""
  config = eval_config()
  config.eval.learned_digits_rule = rule
  mesh = sharding.make_mesh(config.mesh.shape)
  evaluator = evaluator_lib.Evaluator(config, encoder, mesh)
  use_oracle(monkeypatch, encoder, evaluator.questions,
             lambda a: a[::-1] + "1" if len(a) in (5, 6) else a)
  graphdef, state = nnx.split(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
  summary = evaluator.evaluate(graphdef, state)["add_int"]
  assert summary["per_digit"][5]["exact_match"] == 0.0
  assert summary["learned_digits_rule"] == rule
  assert summary["well_learned_digits"]["exact_match"] == well_learned


def _evaluator(random_positions, pe="rope", batch_size=8, positions="training"):
  config = eval_config()
  config.model.posenc = {"name": pe, "random_positions": random_positions}
  config.eval.positions = positions
  config.eval.batch_size = batch_size
  return evaluator_lib.Evaluator(config, Encoder(), sharding.make_mesh(config.mesh.shape))


def _ids_by_question(evaluator):
  """{question id: the ids of its sample's tokens} over the evaluator's batches."""
  out = {}
  for batch, ids in zip(evaluator.batches, evaluator.position_ids):
    for row, question in enumerate(batch.questions):
      out[question.id] = ids[row, :batch.sample_lengths[row]]
  return out


def test_the_evaluator_draws_each_question_ids_as_in_training(monkeypatch, encoder):
  evaluator = _evaluator(64)
  assert len(evaluator.position_ids) == len(evaluator.batches) > 1
  for batch, ids in zip(evaluator.batches, evaluator.position_ids):
    assert ids.shape == (batch.prompts.shape[0], batch.prompts.shape[1] + batch.buffer)
    for row, question in enumerate(batch.questions):
      full, _ = encoder.encode(batch.task, question.a, question.b, question.answer)
      assert batch.sample_lengths[row] == len(full) - 1  # what training feeds of the sample
      used = ids[row, :len(full) - 1]
      assert (np.diff(used) > 0).all() and used.max() < 64
  by_question = _ids_by_question(evaluator)
  assert len(by_question) == sum(len(b.questions) for b in evaluator.batches)
  # Batched otherwise, each question keeps its ids.
  other = _ids_by_question(_evaluator(64, batch_size=4))
  assert sorted(other) == sorted(by_question)
  for question, ids in by_question.items():
    np.testing.assert_array_equal(other[question], ids)
  received = []
  answer = oracle(evaluator.encoder, evaluator.questions, lambda a: a)

  def generate(*args, position_ids, **kwargs):
    received.append(np.asarray(position_ids))
    return answer(*args, **kwargs)

  monkeypatch.setattr(evaluator_lib.generate_lib, "generate", generate)
  monkeypatch.setattr(evaluator_lib.generate_lib, "precompile", lambda *args, **kwargs: None)
  graphdef, state = nnx.split(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
  results = evaluator.evaluate(graphdef, state)
  assert results["add_int"]["S"]["exact_match"] == 1.0
  assert len(received) == len(evaluator.batches)
  for got, ids in zip(received, evaluator.position_ids):
    np.testing.assert_array_equal(got, ids)


def test_training_longest_draws_for_the_longest_answer_of_a_length(encoder):
  """Questions of one length whose answers differ in length (a carry or none) get draws sized by
  their own prompt and the longest answer of that length: the ids do not tell a question how
  long its answer is. A question with that longest answer gets what "training" gives it."""
  evaluator = _evaluator(64, positions="training_longest")
  as_in_training = _ids_by_question(_evaluator(64))
  answers = collections.defaultdict(dict)  # {(task, digits): {question id: answer tokens}}
  rows = []  # (question, task, prompt tokens, drawn size, its ids)
  for batch, ids in zip(evaluator.batches, evaluator.position_ids):
    for row, question in enumerate(batch.questions):
      prompt, _ = encoder.encode(batch.task, question.a, question.b, None)
      full, _ = encoder.encode(batch.task, question.a, question.b, question.answer)
      answers[batch.task, question.digits][question.id] = len(full) - len(prompt)
      rows.append((question, batch.task, len(prompt), int(batch.longest_sample_lengths[row]),
                   ids[row]))
  assert any(len(set(lengths.values())) > 1 for lengths in answers.values())
  for question, task, prompt, size, ids in rows:
    group = answers[task, question.digits]
    assert size == prompt + max(group.values()) - 1  # EOS is only a target
    np.testing.assert_array_equal(ids, positions_lib.as_in_training(
        [size], len(ids), 64, [positions_lib.question_seed(0, question.id)])[0])
    if group[question.id] == max(group.values()):
      np.testing.assert_array_equal(ids[:size], as_in_training[question.id])


def test_an_evaluator_at_another_rule_shares_its_questions_and_draws_that_rules_ids():
  consecutive = _evaluator(64, positions="consecutive")
  for rule in ("training", "training_longest"):
    other = consecutive.at_positions(rule)
    assert other.settings.positions == rule and other.batches is consecutive.batches
    fresh = _evaluator(64, positions=rule)
    for ids, expected in zip(other.position_ids, fresh.position_ids, strict=True):
      np.testing.assert_array_equal(ids, expected)
    assert other.at_positions("consecutive").position_ids == [None] * len(other.batches)
  assert consecutive.settings.positions == "consecutive"  # the original is left as it was
  assert consecutive.position_ids == [None] * len(consecutive.batches)
  assert consecutive.config.eval.positions == "consecutive"
  with pytest.raises(ValueError, match="trains on consecutive ids"):
    _evaluator(0, positions="consecutive").at_positions("training")


def test_the_progress_line_names_a_rule_that_draws_ids(monkeypatch):
  """One model scored several ways prints one such line a rule: each says which it is."""
  consecutive = _evaluator(64, positions="consecutive")
  monkeypatch.setattr(evaluator_lib, "PROGRESS_EVERY_S", 3600.0)
  graphdef, state = nnx.split(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
  questions = sum(len(b.questions) for b in consecutive.batches)
  assert len(consecutive.batches) > 1  # the line is printed for several batches
  for rule, named in (("consecutive", ""),
                      ("training", ", position ids drawn by the rule 'training'"),
                      ("training_longest", ", position ids drawn by the rule 'training_longest'")):
    evaluator = consecutive.at_positions(rule)
    use_oracle(monkeypatch, evaluator.encoder, evaluator.questions, lambda answer: answer)
    lines = []
    evaluator.evaluate(graphdef, state, report=lines.append)
    assert lines[0] == (f"evaluating {questions:,} questions of 2 tasks in "
                        f"{len(consecutive.batches)} batches of 8 prompts{named}")


def test_training_longest_ids_do_not_depend_on_the_batch(encoder):
  """multiply_hard_float answers of one length differ in length by more than a batch's generation
  margin, so a narrow batch's rows are narrower than their draws: each question keeps its ids."""
  def ids_by_question(batch_size):
    config = eval_config()
    config.model.posenc = {"name": "rope", "random_positions": 1024}
    config.eval.positions = "training_longest"
    config.eval.batch_size = batch_size
    config.eval.digits = (20, 20)
    evaluator = evaluator_lib.Evaluator(config, encoder, sharding.make_mesh(config.mesh.shape),
                                        tasks=["multiply_hard_float"], per_length=20)
    narrower = [(b.longest_sample_lengths > ids.shape[1]).sum()
                for b, ids in zip(evaluator.batches, evaluator.position_ids)]
    return {q.id: ids[row] for b, ids in zip(evaluator.batches, evaluator.position_ids)
            for row, q in enumerate(b.questions)}, sum(narrower)
  narrow, clipped = ids_by_question(2)
  wide, _ = ids_by_question(64)
  assert clipped > 0 and sorted(narrow) == sorted(wide)
  for question, ids in narrow.items():
    width = min(len(ids), len(wide[question]))
    np.testing.assert_array_equal(ids[:width], wide[question][:width])


def test_the_evaluator_decodes_a_batch_at_its_ids():
  """The real decoder through the evaluator: a model whose absolute table reads the ids gives
  what generate gives at the batch's ids, and not what it gives at 0, 1, 2, ...."""
  evaluator = _evaluator(64, pe="absolute")
  model = models.build({"preset": "tiny", "posenc": {"name": "absolute", "random_positions": 64}},
                       evaluator.encoder.vocab_size, rngs=nnx.Rngs(0))
  batch, ids = evaluator.batches[-1], evaluator.position_ids[-1]
  got = np.asarray(evaluator._generate(nnx.split(model), len(evaluator.batches) - 1,
                                       jax.random.key(0)))
  options = dict(max_new_tokens=batch.max_new_tokens, buffer=batch.buffer, trim=False,
                 eos_id=evaluator.encoder.eos_id, pad_id=evaluator.encoder.pad_id)
  expected = generate_lib.generate(model, batch.prompts, batch.lengths, position_ids=ids,
                                   **options)
  np.testing.assert_array_equal(got, expected)
  at_consecutive = generate_lib.generate(model, batch.prompts, batch.lengths, **options)
  assert (got != np.asarray(at_consecutive)).any()


def test_ids_as_in_training_need_a_pe_trained_on_random_positions():
  with pytest.raises(ValueError, match=r"posenc 'rope' trains on consecutive ids .* "
                     r"evaluate --positions=consecutive"):
    _evaluator(None)
