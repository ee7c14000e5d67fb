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
- dlength: by default (`DLENGTH_RULES["parts"]`) the sum over parts of |len(predicted part) -
  len(true part)|, the paper's definition (§2.3, Appendix A.1.7). The official text scorer
  (GraphPKU/number_cookbook, `src/text_model/metrics.py`, `StringMetrics.__call__`), which
  scored the paper's LLM tables, subtracts the total lengths instead (`"total"`), which hides a
  digit moved from one part to another; its number-model metric (`src/compute_metrics.py`,
  `Metrics.compute_dlength`) sums the parts.
A prediction that is not of the answer's representation scores as an empty number: exact
match 0, digit match 0, dlength = the ground truth's digit count (Appendix A.2).

Per task, `summarize` pools the questions of each length (per-digit means) and of each
S/M/L/XL bucket (bucket means, pooled over questions as the official code does), and finds the
well-learned and performance-preserving digits by one of `LEARNED_DIGITS_RULES` (see
`learned_digits`). A summary records the rules its numbers were computed with
(`learned_digits_rule`, `dlength_rule`); files from before these fields used the defaults
(`rules_of`).

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
from collections.abc import Callable, Iterable, Mapping, Sequence

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


def _dlength_of_parts(true_lengths: Sequence[int], predicted_lengths: Sequence[int]) -> int:
  return sum(abs(t - p) for t, p in zip(true_lengths, predicted_lengths))


def _dlength_of_totals(true_lengths: Sequence[int], predicted_lengths: Sequence[int]) -> int:
  return abs(sum(true_lengths) - sum(predicted_lengths))


# How `score` measures dlength from the parts' lengths (see the module docstring).
DLENGTH_RULES = {"parts": _dlength_of_parts, "total": _dlength_of_totals}
DEFAULT_DLENGTH_RULE = "parts"


def check_rule(name: str, rules: Mapping[str, Callable], what: str) -> None:
  """A ValueError naming `what` and the known rules unless `rules` has `name`."""
  if name not in rules:
    raise ValueError(f"{what} {name!r} is not one of: {', '.join(rules)}")


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


# An exponent written `E` or `e+` (`1.5E3`, `1.5e+3`): the official scorer reads it as the
# paper's `e`, and so do we. A negative exponent stays unread (NUPA's are never negative).
_SCI_EXPONENT = re.compile(r"(\d)[eE]\+?(\d)")


def _normalized(text: str, repr_name: str) -> str:
  return _SCI_EXPONENT.sub(r"\1e\2", text) if repr_name == "sci" else text


def _answer_match(text: str, repr_name: str) -> re.Match | None:
  return _ANSWER_PATTERNS[repr_name].search(text, text.rfind("=") + 1)


def answer_text(text: str, repr_name: str) -> str:
  """`text` up to the end of its first line holding an answer of `repr_name` (all of it when
  none does). A base model goes on after its answer (a new line, often a new question with its
  own `=`), so its reply is read only up to there."""
  numbers.check_repr(repr_name)
  lines = text.split("\n")
  for i, line in enumerate(lines):
    if _answer_match(_normalized(line, repr_name), repr_name):
      return "\n".join(lines[:i + 1])
  return text


def extract_answer(text: str, repr_name: str) -> str:
  """The answer in raw model text, as the paper reads it: on the first line holding an answer
  (`answer_text`), the first match of the answer's format after the line's last `=` (without
  an `=` the whole line is searched).

  Without a match the answer is empty (which `score` counts as wrong everywhere). The match is
  returned as written together with any sign or characters glued to it (`-1234`, `1,234`,
  `12a`), which then score as wrong: NUPA's answers are unsigned numbers of one format. A
  scientific answer's exponent written `E` or `e+` is read as `e` (`1.5E+3` gives `1.5e3`).
  """
  line = _normalized(answer_text(text, repr_name).rpartition("\n")[2], repr_name)
  match = _answer_match(line, repr_name)
  if not match:
    return ""
  return next(t.group() for t in _TOKEN.finditer(line) if t.start() <= match.start() < t.end())


def score(prediction: str, truth: str, repr_name: str,
          dlength_rule: str = DEFAULT_DLENGTH_RULE) -> dict[str, float]:
  """Exact match (0/1), digit match (in [0, 1]) and dlength (an int) of one prediction.

  `repr_name` is the answer's representation (`task.answer_repr`); `truth` must be of it.
  `dlength_rule` is one of `DLENGTH_RULES`.
  """
  check_rule(dlength_rule, DLENGTH_RULES, "dlength rule")
  truth_parts = numbers.split_parts(truth, repr_name)
  if truth_parts is None:
    raise ValueError(f"ground truth {truth!r} is not a {repr_name!r} number; pass the task's "
                     "answer_repr")
  predicted_parts = numbers.split_parts(prediction, repr_name) or ("",) * len(truth_parts)
  matching = 0
  for name, true_part, predicted_part in zip(numbers.PARTS[repr_name], truth_parts,
                                             predicted_parts):
    if numbers.PART_ALIGN[name] == "right":
      true_part, predicted_part = true_part[::-1], predicted_part[::-1]
    matching += sum(t == p for t, p in zip(true_part, predicted_part))
  return {
      "exact_match": float(prediction == truth),
      "digit_match": matching / sum(map(len, truth_parts)),
      "dlength": DLENGTH_RULES[dlength_rule](list(map(len, truth_parts)),
                                             list(map(len, predicted_parts))),
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


def _longest_passing_prefix(curve: Mapping[int, float], passes: Callable[[float], bool],
                            max_digits: int | None) -> int:
  """All tested lengths up to d pass; lengths past the tier count too (beyond evaluations)."""
  reached = 0
  for digits in sorted(curve):
    if not passes(curve[digits]):
      break
    reached = digits
  return reached


def _longest_passing_anywhere(curve: Mapping[int, float], passes: Callable[[float], bool],
                              max_digits: int | None) -> int:
  """The official summary: the longest passing length among those up to the tier."""
  return max((d for d, v in curve.items()
              if (max_digits is None or d <= max_digits) and passes(v)), default=0)


# How a per-length curve becomes well-learned / performance-preserving digits (`learned_digits`).
LEARNED_DIGITS_RULES = {
    "prefix": _longest_passing_prefix,
    "official": _longest_passing_anywhere,
}
DEFAULT_LEARNED_DIGITS_RULE = "prefix"


def learned_digits(curve: Mapping[int, float], metric: str, level: str,
                   rule: str = DEFAULT_LEARNED_DIGITS_RULE, max_digits: int | None = None) -> int:
  """The longest length at which `curve` reaches `level` on `metric`, by `rule`.

  `curve` maps tested lengths to per-length means. Under both rules thresholds are inclusive
  (as in the official script), lower is better for dlength, every tested length counts however
  short (a test set holds none below its task's shortest), and a curve where no length counts
  gives 0, as in the paper's tables:
  - "prefix" (the default): every tested length up to d passes, so 0 when the shortest tested
    length fails. "Maintain over 90%" (Appendix A.1.7) is read as: one lucky long length after
    a failing one does not count. Lengths past the tier (`max_digits`, unused here) count, so
    a length-generalization run may pass it.
  - "official": the longest passing length anywhere among the tested lengths up to
    `max_digits` (all of them when None), as the official summary computes the paper's tables
    (GraphPKU/number_cookbook, `src/text_model/metrics.py`, `MetricsRecorder.statistics`:
    `max(well_learned_digit, digit)` over every tested digit of `range(0, tier + 1)`).
  The two agree on curves that never pass again after failing.
  """
  if level not in LEVELS:
    raise ValueError(f"unknown level {level!r}; known: {', '.join(LEVELS)}")
  check_rule(rule, LEARNED_DIGITS_RULES, "learned-digits rule")
  thresholds = THRESHOLDS[metric]
  return LEARNED_DIGITS_RULES[rule](curve, lambda v: thresholds.passes(v, level), max_digits)


def learned_digits_of(per_digit: Mapping, max_digits: int, rule: str) -> dict:
  """The `well_learned_digits`, `performance_preserving_digits` and `learned_digits_rule`
  entries of a summary, from its `per_digit` means (keys may be JSON strings)."""
  curves = {m: {int(d): v[m] for d, v in per_digit.items()} for m in METRICS}
  out = {f"{level}_digits": {m: learned_digits(curves[m], m, level, rule, max_digits)
                             for m in METRICS}
         for level in LEVELS}
  return {**out, "learned_digits_rule": rule}


def rules_of(summary: Mapping) -> dict[str, str]:
  """The rules a task summary's numbers were computed with; a summary written before they were
  recorded used the defaults."""
  return {"learned_digits_rule": summary.get("learned_digits_rule", DEFAULT_LEARNED_DIGITS_RULE),
          "dlength_rule": summary.get("dlength_rule", DEFAULT_DLENGTH_RULE)}


def relearn(summary: Mapping, max_digits: int, rule: str) -> dict:
  """`summary` (a task's, as `summarize` or an eval JSON file gives it) with its well-learned
  and performance-preserving digits recomputed from its per-length means by `rule`: another
  rule without generating again. The dlength rule stays as recorded."""
  return {**summary, **rules_of(summary), **learned_digits_of(summary["per_digit"], max_digits,
                                                             rule)}


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

  def summary(self, max_digits: int, rule: str = DEFAULT_LEARNED_DIGITS_RULE,
              dlength_rule: str = DEFAULT_DLENGTH_RULE) -> dict:
    """See `summarize`."""
    check_rule(dlength_rule, DLENGTH_RULES, "dlength rule")
    sums, counts = self._sums, self._counts
    per_digit = {d: _means(sums[d], counts[d]) for d in sorted(sums)}
    out = {"per_digit": per_digit}
    names = BUCKET_NAMES + ((BEYOND,) if max(per_digit, default=0) > max_digits else ())
    for name in names:
      lengths = [d for d in per_digit if bucket(d, max_digits, beyond=True) == name]
      pooled = [sum(sums[d][i] for d in lengths) for i in range(len(METRICS))]
      out[name] = _means(pooled, sum(counts[d] for d in lengths))
    return {**out, **learned_digits_of(per_digit, max_digits, rule), "dlength_rule": dlength_rule}


def summarize(records: Iterable[tuple[int, Mapping[str, float]]], max_digits: int,
              rule: str = DEFAULT_LEARNED_DIGITS_RULE,
              dlength_rule: str = DEFAULT_DLENGTH_RULE) -> dict:
  """Per-length and per-bucket means, well-learned and performance-preserving digits of a task.

  `records` are (question length, `score(...)` result) pairs of one task. Returns
  `{"per_digit": {d: {metric: mean, "n": count}}, "S" | "M" | "L" | "XL": {metric: mean, "n"},
  "well_learned_digits": {metric: d}, "performance_preserving_digits": {metric: d},
  "learned_digits_rule": rule, "dlength_rule": dlength_rule}`, plus `"beyond": {metric: mean,
  "n"}` when some lengths exceed `max_digits` (they also count for the well-learned /
  performance-preserving digits under the "prefix" rule, which may then pass max_digits); a
  bucket without questions has n = 0 and None means. `rule` is one of `LEARNED_DIGITS_RULES`;
  `dlength_rule` names the `DLENGTH_RULES` entry that `score` measured the records' dlength
  with, recorded because the dlength numbers depend on it. Use a `Tally` to summarise a stream.
  """
  tally = Tally()
  for digits, scores in records:
    tally.add(digits, scores)
  return tally.summary(max_digits, rule, dlength_rule)
