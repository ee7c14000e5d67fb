"""paper_vs_ours.csv rows of the paper's well-learned / performance-preserving digit tables, read
back from synthetic run folders; the paper's numbers as extracted into the repository."""
import csv
import json
import pathlib

import pytest

from nupa_jax import metrics
from nupa_jax.report import learned_digits
from nupa_jax.report import versus

PAPER_FILE = (pathlib.Path(__file__).parents[2] / "docs" / "results" / "generalist"
              / "paper_learned_digits.json")

# A paper file of one table in two blocks, the second a verbatim copy of the first's rows.
PAPER = {
    "rules": {"learned_digits_rule": "official", "dlength_rule": "total"},
    "tables": {"tab:well_learned_digit": {
        "scored_metric": "exact_match", "blocks": [["add_int"], ["max_int"]],
        "models": ["GPT-4o", "Qwen2-72B"],
        "values": {
            "well_learned_digits": {"GPT-4o": {"add_int": 5, "max_int": 5},
                                    "Qwen2-72B": {"add_int": 6, "max_int": 6}},
            "performance_preserving_digits": {"GPT-4o": {"add_int": 20, "max_int": 20},
                                              "Qwen2-72B": {"add_int": 20, "max_int": 20}}}}},
    "flags": [{"table": "tab:well_learned_digit", "block": 2, "tasks": ["max_int"],
               "repeats": {"table": "tab:well_learned_digit", "block": 1,
                           "tasks": ["add_int"]}}],
}


def _summary(curve, max_digits, rule="official"):
  records = [(d, {"exact_match": v, "digit_match": v, "dlength": 0}) for d, v in curve.items()]
  return metrics.summarize(records, max_digits, rule)


def _run(root, name, seed, add_int_curve, rule="official"):
  """A run folder whose eval/latest.json holds add_int and max_int summaries of its step-10
  checkpoint (640 samples; the log's last line is step 9), and a re-evaluation of step 5."""
  run = root / name
  (run / "eval" / "evaluations").mkdir(parents=True)
  (run / "config.json").write_text(json.dumps({"seed": seed}))
  (run / "train_metrics.jsonl").write_text(json.dumps({"step": 9, "samples_seen": 576}) + "\n")
  results = {"add_int": _summary(add_int_curve, 20, rule),
             "max_int": _summary({5: 1.0, 6: 0.0, 7: 0.95}, 100, rule)}
  (run / "eval" / "latest.json").write_text(
      json.dumps({**results, "_meta": {"step": 10, "samples_seen": 640}}))
  (run / "eval" / "evaluations" / "step_5_greedy_20q.json").write_text(
      json.dumps({**results, "_meta": {"step": 5, "samples_seen": 320}}))
  return run


def test_rows_average_the_runs_digits_beside_each_paper_model(tmp_path):
  # Seed 0: exact match passes 0.9 at 3-4, fails at 5, passes at 6 -> official wld 6 (prefix
  # would say 4); passes 0.1 up to 8 -> ppd 8. Seed 1: wld 3, ppd 3.
  _run(tmp_path, "seed-0", 0, {3: 1.0, 4: 0.9, 5: 0.5, 6: 0.95, 7: 0.2, 8: 0.1})
  _run(tmp_path, "seed-1", 1, {3: 0.9, 4: 0.05})
  rows = learned_digits.rows(PAPER, [str(tmp_path / "seed-*")])
  by_key = {(r["setting"], r["task"], r["metric"]): r for r in rows}
  assert len(rows) == 2 * 2 * 2  # models x tasks x metrics
  wld = by_key["GPT-4o", "add_int", "well_learned_digits"]
  assert wld["paper_table"] == "tab:well_learned_digit" and wld["digits"] == ""
  assert wld["paper"] == "5" and wld["ours_mean"] == "4.500000"  # (6 + 3) / 2
  assert wld["ours_std"] == "2.121320"  # sample deviation of 6 and 3
  assert wld["seeds"] == "2" and wld["samples_per_run"] == "640"  # the scored checkpoint's
  assert wld["runs"] == f"{tmp_path / 'seed-0'};{tmp_path / 'seed-1'}"
  ppd = by_key["Qwen2-72B", "add_int", "performance_preserving_digits"]
  assert ppd["paper"] == "20" and ppd["ours_mean"] == "5.500000"  # (8 + 3) / 2
  # max_int's block repeats add_int's rows in the paper: no number to compare with.
  flagged = by_key["GPT-4o", "max_int", "well_learned_digits"]
  assert flagged["paper"] == "" and flagged["ours_mean"] == "7.000000"  # 5 and 7 pass, 6 not
  assert learned_digits.rows(PAPER, [str(tmp_path / "seed-0")], models=["Qwen2-72B"])[0][
      "setting"] == "Qwen2-72B"
  greedy = learned_digits.rows(PAPER, [str(tmp_path / "seed-*")],
                               evaluation="eval/evaluations/*_greedy_*.json")
  assert {r["samples_per_run"] for r in greedy} == {"320"}

  out, table = tmp_path / "paper_vs_ours.csv", tmp_path / "table.md"
  assert learned_digits.main(["--paper", str(_paper_file(tmp_path)), "--runs",
                              str(tmp_path / "seed-*"), "--out", str(out), "--markdown",
                              str(table)]) == 0
  with open(out) as f:
    written = list(csv.DictReader(f))
  assert tuple(written[0]) == versus.COLUMNS and written == rows
  assert "| `tab:well_learned_digit` | GPT-4o | add_int |  | well_learned_digits | 5 | " \
         "4.500 ± 2.121 | 2 |" in table.read_text()
  wide = tmp_path / "wide.md"
  assert learned_digits.main(["--paper", str(_paper_file(tmp_path)), "--runs",
                              str(tmp_path / "seed-*"), "--out", str(out), "--wide", str(wide),
                              "--ours_label", "0.1B"]) == 0
  assert wide.read_text().splitlines() == [
      "| task | GPT-4o | Qwen2-72B | 0.1B |", "|---|---|---|---|",
      "| add_int | 5 / 20 | 6 / 20 | 4.5 / 5.5 |",   # ours: means of (6, 3) and (8, 3)
      "| max_int | – / – | – / – | 7 / 7 |"]  # flagged: the paper's cells are not its own


def _paper_file(root):
  path = root / "paper.json"
  path.write_text(json.dumps(PAPER))
  return path


@pytest.mark.parametrize("change, message", [
    # A file of nupa_jax's default rule, e.g. one written before the rules were recorded.
    ({"rule": "prefix"}, r"learned_digits_rule 'prefix', the paper's with 'official'; rescore "
                         r"with python -m nupa_jax.evaluation.relearn --rule official"),
    ({"table": "tab:nope"}, "no table 'tab:nope'"),
    ({"models": ["GPT-5"]}, "no model row 'GPT-5'"),
])
def test_what_cannot_be_compared_is_refused(tmp_path, change, message):
  _run(tmp_path, "a", 0, {3: 1.0}, rule=change.pop("rule", "official"))
  with pytest.raises(versus.SpecError, match=message):
    learned_digits.rows(PAPER, [str(tmp_path / "a")], **change)


def test_the_dlength_table_needs_the_official_dlength_too(tmp_path):
  paper = json.loads(json.dumps(PAPER))
  paper["tables"]["tab:well_learned_digit"]["scored_metric"] = "dlength"
  _run(tmp_path, "a", 0, {3: 1.0})  # dlength_rule "parts"
  with pytest.raises(versus.SpecError, match="dlength_rule 'parts', the paper's with 'total'"):
    learned_digits.rows(paper, [str(tmp_path / "a")])


def test_the_paper_file_holds_the_papers_tables_and_flags():
  paper = learned_digits.read_paper(PAPER_FILE)
  rules = paper["rules"]
  assert (rules["learned_digits_rule"], rules["dlength_rule"]) == ("official", "total")
  tables = paper["tables"]
  assert {label: tables[label]["scored_metric"] for label in tables} == {
      "tab:well_learned_digit": "exact_match",
      "tab:well_learned_digit_digit_match": "digit_match",
      "tab:well_learned_digit_dlength": "dlength"}
  # Cells copied by hand from the paper's LaTeX.
  em, dm, dl = (tables[label]["values"] for label in tables)
  assert em["well_learned_digits"]["GPT-4o"]["add_int"] == 5
  assert em["performance_preserving_digits"]["Llama-3.1-8B-ft"]["add_float"] == 17
  assert dm["well_learned_digits"]["Qwen2-72B"]["max_sci"] == 100
  assert dm["performance_preserving_digits"]["Llama-2-7b-hf"]["to_scient_int"] == 34
  assert dl["well_learned_digits"]["Llama-3.1-8B-ft"]["digit_add_int"] == 26
  assert dl["performance_preserving_digits"]["Qwen2-7B"]["to_float_sci"] == 93
  assert [len(b) for b in tables["tab:well_learned_digit"]["blocks"]] == [8, 8, 8, 8, 8, 3]
  for label, table in tables.items():
    tasks = [t for block in table["blocks"] for t in block]
    assert len(table["models"]) == 9
    for metric in learned_digits.LEVEL_METRICS:
      assert all(list(table["values"][metric][m]) == tasks for m in table["models"]), label
  # Blocks 2-6 of the exact-match table repeat block 1's rows; the other tables repeat nothing.
  assert [(f["table"], f["block"], f["repeats"]["block"]) for f in paper["flags"]] == [
      ("tab:well_learned_digit", b, 1) for b in range(2, 7)]
  first = tables["tab:well_learned_digit"]["blocks"][0]
  for flag in paper["flags"]:
    for metric, rows in em.items():
      for model, row in rows.items():
        assert [row[t] for t in flag["tasks"]] == [row[t] for t in first[:len(flag["tasks"])]]
  assert learned_digits.flagged_tasks(paper, "tab:well_learned_digit") == {
      t for block in tables["tab:well_learned_digit"]["blocks"][1:] for t in block}
