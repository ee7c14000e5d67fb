"""`report.answers`: error kinds of predictions files counted by hand-made answers."""
import csv
import json

import pytest

from nupa_jax.report import answers


def write(path, records):
  path.write_text("".join(json.dumps(r) + "\n" for r in records))
  return path


def line(question, task, digits, exact_match, dlength):
  return {"id": question, "task": task, "digits": digits, "prediction": "?",
          "exact_match": exact_match, "digit_match": 0.5, "dlength": dlength}


CONSECUTIVE = [line("q1", "add_int", 3, 1.0, 0), line("q2", "add_int", 3, 0.0, 0),
               line("q3", "add_int", 3, 0.0, 1), line("q4", "add_int", 4, 1.0, 0),
               line("q5", "max_int", 5, 0.0, 0)]
# q1 right -> wrong digits (broken); q2, q3, q5 wrong -> right (fixed); q4 right both times.
TRAINING = [line("q1", "add_int", 3, 0.0, 0), line("q2", "add_int", 3, 1.0, 0),
            line("q3", "add_int", 3, 1.0, 0), line("q4", "add_int", 4, 1.0, 0),
            line("q5", "max_int", 5, 1.0, 0)]


def test_kinds_and_changes_are_counted_by_task_and_length(tmp_path):
  files = [answers.read(write(tmp_path / f"{n}.jsonl", r))
           for n, r in (("a", CONSECUTIVE), ("b", TRAINING))]
  table = answers.rows(files, ["consecutive", "training"])
  counts = [(r["label"], r["task"], r["digits"], r["questions"], r["right"], r["wrong_length"],
             r["wrong_digits"], r["fixed"], r["broken"]) for r in table]
  assert counts == [
      ("consecutive", "add_int", 3, 3, 1, 1, 1, "", ""),
      ("consecutive", "add_int", 4, 1, 1, 0, 0, "", ""),
      ("consecutive", "max_int", 5, 1, 0, 0, 1, "", ""),
      ("training", "add_int", 3, 3, 2, 0, 1, 2, 1),
      ("training", "add_int", 4, 1, 1, 0, 0, 0, 0),
      ("training", "max_int", 5, 1, 1, 0, 0, 1, 0)]
  only_max = answers.rows(files, ["consecutive", "training"], ["max_int"])
  assert [(r["label"], r["task"]) for r in only_max] == [("consecutive", "max_int"),
                                                        ("training", "max_int")]


def test_files_that_cannot_be_compared_or_read_say_why(tmp_path):
  first = answers.read(write(tmp_path / "a.jsonl", CONSECUTIVE))
  fewer = answers.read(write(tmp_path / "b.jsonl", TRAINING[:4]))
  with pytest.raises(answers.AnswersError, match="b answers 4 questions and a 5, 1 of them"):
    answers.rows([first, fewer], ["a", "b"])
  with pytest.raises(answers.AnswersError, match="a holds no answer of sub_int"):
    answers.rows([first], ["a"], ["sub_int"])
  with pytest.raises(answers.AnswersError, match=r"c.jsonl:2: no exact_match, dlength"):
    answers.read(write(tmp_path / "c.jsonl", [CONSECUTIVE[0], {"id": "q2", "task": "add_int",
                                                               "digits": 3}]))
  with pytest.raises(answers.AnswersError, match="d.jsonl:2: a second answer to 'q1'"):
    answers.read(write(tmp_path / "d.jsonl", [CONSECUTIVE[0], CONSECUTIVE[0]]))


def test_the_command_prints_markdown_and_writes_csv(tmp_path, capsys):
  a = write(tmp_path / "step_7_sampled_2q.predictions.jsonl", CONSECUTIVE)
  b = write(tmp_path / "b.predictions.jsonl", TRAINING)
  out = tmp_path / "answers.csv"
  assert answers.main([str(a), str(b), "--out", str(out)]) == 0
  printed = capsys.readouterr().out.splitlines()
  assert printed[0] == "| " + " | ".join(answers.COLUMNS) + " |"
  assert printed[2] == "| step_7_sampled_2q.predictions | add_int | 3 | 3 | 1 | 1 | 1 |  |  |"
  with open(out) as f:
    written = list(csv.DictReader(f))
  assert len(written) == 6 and written[3]["label"] == "b.predictions"
  assert (written[3]["fixed"], written[3]["broken"]) == ("2", "1")
  with pytest.raises(SystemExit):
    answers.main([str(a), str(b), "--labels", "one"])
  assert "--labels gives 1 names for 2 files" in capsys.readouterr().err
