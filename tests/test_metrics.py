"""The paper's metrics on hand-worked cases (Appendix A.1.7 and A.2)."""
import json
import random

import pytest

from nupa_jax import metrics


def _triple(prediction, truth, repr_name):
  s = metrics.score(prediction, truth, repr_name)
  return s["exact_match"], s["digit_match"], s["dlength"]


@pytest.mark.parametrize("prediction, truth, repr_name, expected", [
    # Integers align from the least significant digit: 5,4 match; 3 vs 2, 2 vs 1 do not; the
    # leading 1 is missing.
    ("1245", "12345", "int", (0, 2 / 5, 1)),
    # Float: integer part from the right ("2" matches, "1" missing), decimals from the left
    # ("3", "4" match, "5" missing).
    ("2.34", "12.345", "float", (0, 3 / 5, 2)),
    # Fraction: numerator and denominator both from the right.
    ("13/4", "3/14", "frac", (0, 2 / 3, 2)),
    ("1/1", "1/1", "frac", (1, 1, 0)),
    # Scientific: mantissa integer right, mantissa decimals left, exponent right.
    ("1.2e2", "1.25e12", "sci", (0, 3 / 5, 2)),
    ("1.35e12", "1.25e12", "sci", (0, 4 / 5, 0)),
    # Extra predicted digits do not enter the denominator; dlength counts them.
    ("12345", "45", "int", (0, 1, 3)),
    ("1.50", "1.5", "float", (0, 1, 1)),
    # Compared as written: no normalisation.
    ("007", "7", "int", (0, 1, 2)),
    ("7", "7", "int", (1, 1, 0)),
    # A digit moved between parts: the totals agree, but each part is off by one and no digit
    # lines up any more (2|3, 1|2 from the right; 3|4 and a missing 4 from the left).
    ("123.4", "12.34", "float", (0, 0, 2)),
])
def test_hand_worked_scores(prediction, truth, repr_name, expected):
  em, dm, dl = _triple(prediction, truth, repr_name)
  assert (em, dl) == (expected[0], expected[2])
  assert dm == pytest.approx(expected[1])


@pytest.mark.parametrize("prediction, truth, repr_name", [
    ("", "123", "int"),
    ("abc", "123", "int"),
    ("12", "12.5", "float"),        # an int where a float is due
    ("0.75", "3/4", "frac"),
    ("1.2E3", "1.2e3", "sci"),      # the paper's format is lower-case e
    ("-5", "5", "int"),
    (" 5", "5", "int"),             # score takes an extracted answer, not raw text
])
def test_unparsable_prediction_scores_as_empty(prediction, truth, repr_name):
  em, dm, dl = _triple(prediction, truth, repr_name)
  true_digits = sum(c.isdigit() for c in truth)
  assert (em, dm, dl) == (0, 0, true_digits)


def test_truth_of_wrong_representation_is_an_error():
  with pytest.raises(ValueError, match="answer_repr"):
    metrics.score("1", "1.5", "int")


def test_random_predictions_against_a_padding_reference():
  """Digit match and dlength from an independent construction: pad each part to a common width
  with a non-digit filler on the side away from its alignment, then compare column by column."""
  rng = random.Random(0)

  def digits(n):
    return "".join(rng.choice("0123456789") for _ in range(n))

  for _ in range(300):
    truth = (digits(rng.randint(1, 6)), digits(rng.randint(1, 6)))
    pred = (digits(rng.randint(0, 7)), digits(rng.randint(0, 7)))
    matching = 0
    for t, p, side in zip(truth, pred, ("right", "left")):
      width = max(len(t), len(p))
      pad = str.rjust if side == "right" else str.ljust
      matching += sum(a == b for a, b in zip(pad(t, width, "x"), pad(p, width, "y")))
    expected_dl = abs(len(truth[0]) - len(pred[0])) + abs(len(truth[1]) - len(pred[1]))
    if pred[0] and pred[1]:
      em, dm, dl = _triple(".".join(pred), ".".join(truth), "float")
      assert dm == pytest.approx(matching / (len(truth[0]) + len(truth[1])))
      assert dl == expected_dl
      assert em == (pred == truth)
    else:  # "5." or ".5" is not a float: empty
      assert _triple(".".join(pred), ".".join(truth), "float") == (
          0, 0, len(truth[0]) + len(truth[1]))


@pytest.mark.parametrize("text, repr_name, expected", [
    ("Add two numbers: 966 + 85 = 1051", "int", "1051"),
    ("The answer is 1051.", "int", "1051"),                        # no "=": whole text
    ("12 + 5 = 17, so the answer is 17. Check: 17 - 5 = 12", "int", "12"),   # after the last =
    (" = The answer is 0012", "int", "0012"),                       # kept as written
    ("= The answer is 1,234", "int", "1,234"),                      # glued: kept, so wrong
    ("= The answer is **1234**.", "int", "1234"),                   # markup and full stop
    ("966 + 85 = -1051", "int", "-1051"),                           # a sign is kept: wrong
    ("= \u22121051", "int", "\u22121051"),                          # so is a minus sign
    ("= +1051", "int", "+1051"),
    ("= 1051abc", "int", "1051abc"),
    ("= 3.14.15", "float", "3.14.15"),
    ("12 - 5 = 7", "int", "7"),                                     # a minus between numbers
    (" 1051\nAdd two numbers: 966 + 85 = 7", "int", "1051"),        # run-on: first answer line
    ("Add two numbers: 966 + 85 = 1051\nAdd two numbers: 1 + 2 = 3", "int", "1051"),
    ("Sure.\nThe answer is 1.5e3.\n= 2.5e3", "sci", "1.5e3"),       # lines without an answer
    ("x = 3", "float", ""),                                         # no float after "="
    ("= The answer is 3.14.", "float", "3.14"),
    ("1/2 + 1/4 = 3/4", "frac", "3/4"),
    ("= 3 / 4", "frac", ""),
    ("Convert: 12300 = The answer is 1.23e4", "sci", "1.23e4"),
    ("= 1.23E4", "sci", "1.23e4"),                                  # read as the official
    ("= The answer is 1.5e+3.", "sci", "1.5e3"),                    # scorer reads them
    ("= 1.5e-3", "sci", ""),                                        # NUPA has no such exponent
    ("Sure.\nThe answer is 1.5E3.\n= 2.5e3", "sci", "1.5e3"),
    ("no numbers here", "int", ""),
    ("", "int", ""),
])
def test_extract_answer(text, repr_name, expected):
  assert metrics.extract_answer(text, repr_name) == expected


@pytest.mark.parametrize("reply, answer_repr, expected", [
    (" 579\nDirectly return ... Add two numbers: 3 + 4 = 7", "int", " 579"),
    ("123 + 456 = 579\n", "int", "123 + 456 = 579"),
    ("Sure.\nThe answer is 1.5e3.", "sci", "Sure.\nThe answer is 1.5e3."),
    ("The answer is 1.5E+3.\n= 2.5e3", "sci", "The answer is 1.5E+3."),  # kept as written
    ("no number here\nat all", "frac", "no number here\nat all"),
])
def test_a_reply_is_read_up_to_its_first_answer_line(reply, answer_repr, expected):
  assert metrics.answer_text(reply, answer_repr) == expected
  assert metrics.extract_answer(reply, answer_repr) == metrics.extract_answer(expected,
                                                                              answer_repr)


def test_a_signed_or_glued_answer_scores_as_no_answer():
  for text in ("= -1234", "= 1234x", "= 12,34"):
    assert _triple(metrics.extract_answer(text, "int"), "1234", "int") == (0, 0, 4)


def test_extract_answer_rejects_unknown_representation():
  with pytest.raises(ValueError, match="known: int, float, frac, sci"):
    metrics.extract_answer("= 1", "integer")


@pytest.mark.parametrize("max_digits, edges", [
    (20, {1: "S", 4: "S", 5: "M", 8: "M", 9: "L", 14: "L", 15: "XL", 20: "XL"}),
    (100, {1: "S", 10: "S", 11: "M", 20: "M", 21: "L", 60: "L", 61: "XL", 100: "XL"}),
])
def test_bucket_edges(max_digits, edges):
  for digits, name in edges.items():
    assert metrics.bucket(digits, max_digits) == name


@pytest.mark.parametrize("digits, max_digits", [(0, 20), (21, 20), (101, 100), (5, 50)])
def test_bucket_out_of_range(digits, max_digits):
  with pytest.raises(ValueError):
    metrics.bucket(digits, max_digits)


def test_learned_digits_on_constructed_curves():
  em = {3: 1.0, 4: 0.95, 5: 0.9, 6: 0.5, 7: 0.1, 8: 0.05, 9: 0.2}
  assert metrics.learned_digits(em, "exact_match", "well_learned") == 5   # 0.9 is inclusive
  # 9 passes 0.1 again, but 8 did not maintain it.
  assert metrics.learned_digits(em, "exact_match", "performance_preserving") == 7
  dm = {5: 0.95, 6: 0.89, 7: 0.6, 8: 0.49}
  assert metrics.learned_digits(dm, "digit_match", "well_learned") == 5
  assert metrics.learned_digits(dm, "digit_match", "performance_preserving") == 7
  dl = {1: 0.0, 2: 0.1, 3: 0.5, 4: 1.0, 5: 3.0}   # smaller is better
  assert metrics.learned_digits(dl, "dlength", "well_learned") == 2
  assert metrics.learned_digits(dl, "dlength", "performance_preserving") == 4
  # The shortest tested length already fails: 0, as in the paper's tables.
  assert metrics.learned_digits({3: 0.5, 4: 0.95}, "exact_match", "well_learned") == 0
  assert metrics.learned_digits({}, "exact_match", "well_learned") == 0


def test_summarize_pools_questions():
  exact = {"exact_match": 1.0, "digit_match": 1.0, "dlength": 0}
  wrong = {"exact_match": 0.0, "digit_match": 0.5, "dlength": 2}
  # Length 3: 1 right of 1; length 4: 1 of 3; length 9: 0 of 2.
  records = [(3, exact), (4, exact), (4, wrong), (4, wrong), (9, wrong), (9, wrong)]
  out = metrics.summarize(records, max_digits=20)
  assert out["per_digit"][4] == {"exact_match": 1 / 3, "digit_match": 2 / 3, "dlength": 4 / 3,
                                 "n": 3}
  # Bucket S pools 4 questions (2 right), not the mean of the two per-length means.
  assert out["S"] == {"exact_match": 0.5, "digit_match": 0.75, "dlength": 1.0, "n": 4}
  assert out["M"] == {"exact_match": None, "digit_match": None, "dlength": None, "n": 0}
  assert out["L"]["n"] == 2 and out["L"]["exact_match"] == 0
  assert out["well_learned_digits"] == {"exact_match": 3, "digit_match": 3, "dlength": 3}
  assert out["performance_preserving_digits"] == {"exact_match": 4, "digit_match": 9,
                                                  "dlength": 3}


@pytest.mark.parametrize("metric, curve, level, prefix, official", [
    # Passes at 1-3, fails at 4, passes again at 5: the official summary takes 5.
    ("exact_match", {1: 1.0, 2: 0.95, 3: 0.9, 4: 0.5, 5: 0.92}, "well_learned", 3, 5),
    ("exact_match", {1: 1.0, 2: 0.95, 3: 0.9, 4: 0.5, 5: 0.92}, "performance_preserving", 5, 5),
    ("digit_match", {3: 0.8, 4: 0.4, 5: 0.6, 6: 0.3}, "performance_preserving", 3, 5),
    # dlength: lower is better, thresholds inclusive (0.1 and 1.0).
    ("dlength", {1: 0.0, 2: 0.5, 3: 0.1, 4: 2.0, 5: 1.0}, "well_learned", 1, 3),
    ("dlength", {1: 0.0, 2: 0.5, 3: 0.1, 4: 2.0, 5: 1.0}, "performance_preserving", 3, 5),
    # The shortest length fails: prefix 0, while the official rule still finds 6.
    ("exact_match", {5: 0.05, 6: 0.2, 7: 0.0}, "performance_preserving", 0, 6),
    # No length passes, or none tested: 0 under both rules.
    ("exact_match", {3: 0.5, 4: 0.0}, "well_learned", 0, 0),
    ("dlength", {3: 0.5, 4: 3.0}, "well_learned", 0, 0),
    ("exact_match", {}, "well_learned", 0, 0),
])
def test_learned_digit_rules_on_hand_computed_curves(metric, curve, level, prefix, official):
  assert metrics.learned_digits(curve, metric, level) == prefix  # the default rule
  assert metrics.learned_digits(curve, metric, level, "prefix", 20) == prefix
  assert metrics.learned_digits(curve, metric, level, "official", 20) == official


def test_official_rule_stops_at_the_tier_and_prefix_goes_beyond():
  curve = {19: 1.0, 20: 1.0, 21: 1.0, 24: 0.95}  # 21 and 24: lengths past a 20-digit tier
  assert metrics.learned_digits(curve, "exact_match", "well_learned", "official", 20) == 20
  assert metrics.learned_digits(curve, "exact_match", "well_learned", "official") == 24
  assert metrics.learned_digits(curve, "exact_match", "well_learned", "prefix", 20) == 24


def test_unknown_rules_are_refused():
  with pytest.raises(ValueError, match="learned-digits rule 'anywhere' is not one of: prefix"):
    metrics.learned_digits({1: 1.0}, "exact_match", "well_learned", "anywhere")
  with pytest.raises(ValueError, match="dlength rule 'sum' is not one of: parts, total"):
    metrics.score("1", "1", "int", dlength_rule="sum")


@pytest.mark.parametrize("prediction, truth, repr_name, parts, total", [
    ("123.45", "12.345", "float", 2, 0),  # a digit moved across the point: hidden by totals
    ("2.34", "12.345", "float", 2, 2),
    ("12.3e4", "1.23e45", "sci", 3, 1),   # |2-1| + |1-2| + |1-2| against |5 - 6|
    ("1245", "12345", "int", 1, 1),       # one part: the rules agree
    ("", "12.345", "float", 5, 5),        # no answer: the ground truth's digit count
])
def test_dlength_rules(prediction, truth, repr_name, parts, total):
  assert metrics.score(prediction, truth, repr_name)["dlength"] == parts  # the default
  assert metrics.score(prediction, truth, repr_name, "parts")["dlength"] == parts
  assert metrics.score(prediction, truth, repr_name, "total")["dlength"] == total


def test_summaries_record_their_rules_and_relearn_from_json():
  right = {"exact_match": 1.0, "digit_match": 1.0, "dlength": 0}
  wrong = {"exact_match": 0.0, "digit_match": 0.0, "dlength": 3}
  records = [(3, right), (4, right), (5, wrong), (6, right)]  # passes at 3, 4 and 6
  prefix = metrics.summarize(records, 20)
  assert prefix["learned_digits_rule"] == "prefix" and prefix["dlength_rule"] == "parts"
  assert prefix["well_learned_digits"] == {"exact_match": 4, "digit_match": 4, "dlength": 4}
  official = metrics.summarize(records, 20, rule="official", dlength_rule="total")
  assert official["well_learned_digits"] == {"exact_match": 6, "digit_match": 6, "dlength": 6}
  assert official["learned_digits_rule"] == "official" and official["dlength_rule"] == "total"
  # From a file's summary (string keys): the other rule, the means and the dlength rule kept.
  stored = json.loads(json.dumps(prefix))
  relearned = metrics.relearn(stored, 20, "official")
  assert relearned["well_learned_digits"] == official["well_learned_digits"]
  assert relearned["performance_preserving_digits"] == {
      "exact_match": 6, "digit_match": 6, "dlength": 6}
  assert relearned["learned_digits_rule"] == "official" and relearned["dlength_rule"] == "parts"
  assert relearned["per_digit"] == stored["per_digit"] and relearned["S"] == stored["S"]
  assert metrics.relearn(relearned, 20, "prefix") == stored


def test_a_summary_written_before_the_rules_were_recorded_used_the_defaults():
  old = {"per_digit": {"3": {"exact_match": 1.0, "digit_match": 1.0, "dlength": 0, "n": 1}},
         "well_learned_digits": {"exact_match": 3, "digit_match": 3, "dlength": 3}}
  assert metrics.rules_of(old) == {"learned_digits_rule": "prefix", "dlength_rule": "parts"}
  assert metrics.relearn(old, 20, "official")["dlength_rule"] == "parts"
