"""The well-learned / dlength rules as evaluation settings, in results files, and recomputed on
files already written (old ones included) by `python -m nupa_jax.evaluation.relearn`."""
import glob
import json

import pytest

from configs import common
from nupa_jax import metrics
from nupa_jax import paths
from nupa_jax.evaluation import relearn as relearn_cli
from nupa_jax.evaluation import results as results_lib
from nupa_jax.evaluation import settings as settings_lib
from nupa_jax.report import loading

# add_int (a 20-digit tier): exact match passes 0.9 at 3, fails at 4, passes at 5.
CURVE = {3: 1.0, 4: 0.5, 5: 0.95}


def _records():
  return [(d, {"exact_match": em, "digit_match": em, "dlength": 0})
          for d, em in CURVE.items()]


def test_rules_are_eval_settings_with_the_current_rules_as_defaults():
  config = common.base("tiny")
  defaults = settings_lib.Eval.from_config(config)
  assert (defaults.learned_digits_rule, defaults.dlength_rule) == ("prefix", "parts")
  config.eval.learned_digits_rule, config.eval.dlength_rule = "official", "total"
  chosen = settings_lib.Eval.from_config(config)
  assert (chosen.learned_digits_rule, chosen.dlength_rule) == ("official", "total")
  config.eval.learned_digits_rule = "anywhere"
  with pytest.raises(ValueError, match="config.eval.learned_digits_rule 'anywhere' is not one "
                                       "of: prefix, official"):
    settings_lib.Eval.from_config(config)


def test_the_configured_rules_reach_the_results_file(tmp_path):
  config = common.base("tiny")
  config.eval.learned_digits_rule, config.eval.dlength_rule = "official", "total"
  e = settings_lib.Eval.from_config(config)
  summary = metrics.summarize(_records(), 20, e.learned_digits_rule, e.dlength_rule)
  path = results_lib.write_results(tmp_path, 7, {"add_int": summary}, {"samples_seen": 64})
  written = json.loads(path.read_text())["add_int"]
  assert written["well_learned_digits"]["exact_match"] == 5
  assert written["learned_digits_rule"] == "official" and written["dlength_rule"] == "total"
  assert loading.read_evaluation(path).tasks["add_int"].well_learned["exact_match"] == 5


def test_relearn_recomputes_every_task_and_keeps_the_rest(tmp_path):
  results = {"add_int": json.loads(json.dumps(metrics.summarize(_records(), 20))),
             "_meta": {"step": 7}}
  assert results["add_int"]["well_learned_digits"]["exact_match"] == 3
  official = results_lib.relearn(results, "official")
  assert official["add_int"]["well_learned_digits"]["exact_match"] == 5
  assert official["_meta"] == {"step": 7}
  assert official["add_int"]["per_digit"] == results["add_int"]["per_digit"]
  with pytest.raises(ValueError, match="task 'add_int' has no per_digit means"):
    results_lib.relearn({"add_int": {"S": {}}}, "official")
  with pytest.raises(ValueError, match="unknown task 'nope'"):
    results_lib.relearn({"nope": results["add_int"]}, "official")


def test_relearn_cli_in_place_and_to_another_file(tmp_path, capsys):
  path = tmp_path / "latest.json"
  path.write_text(json.dumps({"add_int": metrics.summarize(_records(), 20), "_meta": {}}))
  other = tmp_path / "out" / "official.json"
  assert relearn_cli.main([str(path), "--rule", "official", "--out", str(other)]) == 0
  assert json.loads(other.read_text())["add_int"]["well_learned_digits"]["exact_match"] == 5
  assert json.loads(path.read_text())["add_int"]["learned_digits_rule"] == "prefix"
  assert relearn_cli.main([str(path), "--rule", "official"]) == 0
  assert json.loads(path.read_text()) == json.loads(other.read_text())
  with pytest.raises(SystemExit) as exit_info:
    relearn_cli.main([str(path), str(other), "--rule", "official", "--out", str(other)])
  assert exit_info.value.code == 2 and "--out takes one input file" in capsys.readouterr().err


def test_every_results_file_in_the_repository_relearns_and_stays_readable(tmp_path):
  """Every file recomputes to the same digits by the rule that wrote it: the one it records, or
  for old files, which carry no rules, the default one."""
  files = sorted(glob.glob("docs/results/*/runs/*/eval/*.json"))
  assert files
  rules_seen = set()
  for source in files:
    old = json.loads(open(source).read())
    rules = {metrics.rules_of(s)["learned_digits_rule"] for t, s in old.items()
             if not t.startswith("_")}
    assert len(rules) == 1, source
    rule = rules.pop()
    rules_seen.add(rule)
    again = results_lib.relearn(old, rule)
    for task, summary in old.items():
      if task.startswith("_"):
        continue
      for level in ("well_learned_digits", "performance_preserving_digits"):
        assert again[task][level] == summary[level], (source, task, level)
    out = tmp_path / "official.json"
    relearn_cli.relearn_file(source, "official", str(out))
    assert loading.read_evaluation(out).tasks.keys() == loading.read_evaluation(
        paths.path(source)).tasks.keys()
  assert rules_seen == {"prefix", "official"}  # the generalist's files use the paper's rule
