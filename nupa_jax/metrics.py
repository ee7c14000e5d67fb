"""The NUPA metrics (paper §2.3 and Appendix A.1.7), shared by `benchmark score` and training-time
evaluation so that both report the same numbers.

Per question:
- exact match: the prediction string equals the answer string, compared as written (`007` is
  not `7`, `1.50` is not `1.5`).
- digit match: both numbers are split into parts (`numbers.PARTS`), each part is aligned as
  `numbers.PART_ALIGN` says (integer-like parts from the least significant digit, decimal parts
  from the most significant one), and the score is matching digits / ground-truth digits.
  Missing digits count as errors. Extra predicted digits are *not* added to the denominator:
  the paper measures "the correctness of each digit [of the ground truth], with missing digits
  considered as errors", and the official code divides by the ground truth's digit count; extra
  digits are what dlength measures.
- dlength: the sum over parts of |len(predicted part) - len(true part)| (the paper's wording;
  the official LLM-scoring script subtracts the total lengths instead, which hides a digit moved
  from one part to another).
A prediction that is not of the answer's representation scores as an empty number: exact
match 0, digit match 0, dlength = the ground truth's digit count (Appendix A.2).

Per task, `summarize` pools the questions of each length (per-digit means) and of each
S/M/L/XL bucket (bucket means, pooled over questions as the official code does), and finds the
well-learned and performance-preserving digits.

Lengths past the benchmark (questions longer than the task's tier, `benchmark.testset`'s
extension for length-generalization runs) fall in no S/M/L/XL bucket: the paper's buckets split
the tier's own range, and stretching XL would mix in-benchmark and beyond-benchmark lengths.
They are pooled into one extra bucket, `BEYOND` ("beyond": every length > max_digits), which a
summary carries only when it has such lengths — so in-benchmark summaries keep their exact
layout — besides their per-digit means, which are the result to read for such runs.
"""
import collections
import dataclasses
import re
from typing import Iterable, Mapping

from nupa_jax import numbers

METRICS = ("exact_match", "digit_match", "dlength")
BUCKET_NAMES = ("S", "M", "L", "XL")
BEYOND = "beyond"  # the bucket of lengths past the task's tier (see the module docstring)

# Upper edge (inclusive) of each bucket, by the task's tier (its longest length): paper §2.3.
BUCKET_EDGES = {20: (4, 8, 14, 20), 100: (10, 20, 60, 100)}


@dataclasses.dataclass(frozen=True)
class Thresholds:
  """Levels that a per-length mean must reach for a length to count as learned (Appendix A.1.7)."""
  well_learned: float
  performance_preserving: float
  higher_is_better: bool

  def passes(self, value: float, level: str) -> bool:
    limit = getattr(self, level)
    return value >= limit if self.higher_is_better else value <= limit


THRESHOLDS = {
    "exact_match": Thresholds(well_learned=0.9, performance_preserving=0.1, higher_is_better=True),
    "digit_match": Thresholds(well_learned=0.9, performance_preserving=0.5, higher_is_better=True),
    "dlength": Thresholds(well_learned=0.1, performance_preserving=1.0, higher_is_better=False),
}
LEVELS = ("well_learned", "performance_preserving")

# The answer formats that the paper's prompts ask LLMs to follow (Appendix A.2).
_ANSWER_PATTERNS = {
    "int": re.compile(r"\d+"),
    "float": re.compile(r"\d+\.\d+"),
    "frac": re.compile(r"\d+/\d+"),
    "sci": re.compile(r"\d+\.\d+e\d+"),
}


# Characters that, written against a matched answer, make it another string: a sign before it
# (NUPA has no negative answers), letters, digits or a number's separators glued to either side
# (`12a`, `1,234`, `3.14.15`). A `.` or `,` that ends a sentence is not glued to anything.
_TOKEN = re.compile(r"[-+\u2212]?\w+(?:[.,/]\w+)*")


def _answer_match(text: str, repr_name: str) -> re.Match | None:
  return _ANSWER_PATTERNS[repr_name].search(text, text.rfind("=") + 1)


def answer_text(text: str, repr_name: str) -> str:
  """`text` up to the end of its first line holding an answer of `repr_name` (all of it when
  none does). A base model goes on after its answer (a new line, often a new question with its
  own `=`), so its reply is read only up to there."""
  numbers.check_repr(repr_name)
  lines = text.split("\n")
  for i, line in enumerate(lines):
    if _answer_match(line, repr_name):
      return "\n".join(lines[:i + 1])
  return text


def extract_answer(text: str, repr_name: str) -> str:
  """The answer in raw model text, as the paper reads it: on the first line holding an answer
  (`answer_text`), the first match of the answer's format after the line's last `=` (without
  an `=` the whole line is searched).

  Without a match the answer is empty (which `score` counts as wrong everywhere). The match is
  returned as written together with any sign or characters glued to it (`-1234`, `1,234`,
  `12a`), which then score as wrong: NUPA's answers are unsigned numbers of one format.
  """
  line = answer_text(text, repr_name).rpartition("\n")[2]
  match = _answer_match(line, repr_name)
  if not match:
    return ""
  return next(t.group() for t in _TOKEN.finditer(line) if t.start() <= match.start() < t.end())


def score(prediction: str, truth: str, repr_name: str) -> dict[str, float]:
  """Exact match (0/1), digit match (in [0, 1]) and dlength (an int) of one prediction.

  `repr_name` is the answer's representation (`task.answer_repr`); `truth` must be of it.
  """
  truth_parts = numbers.split_parts(truth, repr_name)
  if truth_parts is None:
    raise ValueError(f"ground truth {truth!r} is not a {repr_name!r} number; pass the task's "
                     "answer_repr")
  predicted_parts = numbers.split_parts(prediction, repr_name) or ("",) * len(truth_parts)
  matching = dlength = 0
  for name, true_part, predicted_part in zip(numbers.PARTS[repr_name], truth_parts,
                                             predicted_parts):
    if numbers.PART_ALIGN[name] == "right":
      true_part, predicted_part = true_part[::-1], predicted_part[::-1]
    matching += sum(t == p for t, p in zip(true_part, predicted_part))
    dlength += abs(len(true_part) - len(predicted_part))
  return {
      "exact_match": float(prediction == truth),
      "digit_match": matching / sum(map(len, truth_parts)),
      "dlength": dlength,
  }


def bucket(digits: int, max_digits: int, *, beyond: bool = False) -> str:
  """The S/M/L/XL range of a question length in a task of tier `max_digits` (20 or 100).

  A length past the tier raises, unless `beyond` (questions and summaries of evaluations past
  the benchmark) names it `BEYOND`; lengths below 1 always raise.
  """
  if max_digits not in BUCKET_EDGES:
    raise ValueError(f"unknown task tier max_digits={max_digits}; known: "
                     f"{', '.join(map(str, BUCKET_EDGES))}")
  for name, upper in zip(BUCKET_NAMES, BUCKET_EDGES[max_digits]):
    if 1 <= digits <= upper:
      return name
  if beyond and digits > max_digits:
    return BEYOND
  raise ValueError(f"length {digits} is outside 1..{max_digits}")


def learned_digits(curve: Mapping[int, float], metric: str, level: str) -> int:
  """The longest length up to which every tested length reaches `level` on `metric`.

  `curve` maps tested lengths to per-length means. "Maintain over 90%" (Appendix A.1.7) is read
  as: all tested lengths up to d pass, so one lucky long length does not count (the official
  script takes the longest passing length anywhere; the two agree on monotone curves).
  Thresholds are inclusive, as in the official script. 0 when the shortest tested length fails.
  """
  if level not in LEVELS:
    raise ValueError(f"unknown level {level!r}; known: {', '.join(LEVELS)}")
  thresholds = THRESHOLDS[metric]
  reached = 0
  for digits in sorted(curve):
    if not thresholds.passes(curve[digits], level):
      break
    reached = digits
  return reached


def _means(sums: list[float], count: int) -> dict[str, float | int | None]:
  means = {m: (s / count if count else None) for m, s in zip(METRICS, sums)}
  return {**means, "n": count}


class Tally:
  """Running per-length sums of question scores: a task's summary without keeping questions."""

  def __init__(self):
    self._sums = collections.defaultdict(lambda: [0.0] * len(METRICS))
    self._counts = collections.Counter()

  def add(self, digits: int, scores: Mapping[str, float]) -> None:
    row = self._sums[digits]
    for i, metric in enumerate(METRICS):
      row[i] += scores[metric]
    self._counts[digits] += 1

  def summary(self, max_digits: int) -> dict:
    """See `summarize`."""
    sums, counts = self._sums, self._counts
    per_digit = {d: _means(sums[d], counts[d]) for d in sorted(sums)}
    out = {"per_digit": per_digit}
    names = BUCKET_NAMES + ((BEYOND,) if max(per_digit, default=0) > max_digits else ())
    for name in names:
      lengths = [d for d in per_digit if bucket(d, max_digits, beyond=True) == name]
      pooled = [sum(sums[d][i] for d in lengths) for i in range(len(METRICS))]
      out[name] = _means(pooled, sum(counts[d] for d in lengths))
    for level in LEVELS:
      out[f"{level}_digits"] = {
          metric: learned_digits({d: v[metric] for d, v in per_digit.items()}, metric, level)
          for metric in METRICS
      }
    return out


def summarize(records: Iterable[tuple[int, Mapping[str, float]]], max_digits: int) -> dict:
  """Per-length and per-bucket means, well-learned and performance-preserving digits of a task.

  `records` are (question length, `score(...)` result) pairs of one task. Returns
  `{"per_digit": {d: {metric: mean, "n": count}}, "S" | "M" | "L" | "XL": {metric: mean, "n"},
  "well_learned_digits": {metric: d}, "performance_preserving_digits": {metric: d}}`, plus
  `"beyond": {metric: mean, "n"}` when some lengths exceed `max_digits` (they also count for
  the well-learned / performance-preserving digits, which may then pass max_digits); a bucket
  without questions has n = 0 and None means. Use a `Tally` to summarise a stream.
  """
  tally = Tally()
  for digits, scores in records:
    tally.add(digits, scores)
  return tally.summary(max_digits)
