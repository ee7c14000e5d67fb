"""Usage errors of every command-line tool: one line on stderr naming the fix, exit status 2."""
import os
import pathlib
import subprocess
import sys

import ml_collections
import pytest

from nupa_jax import cli

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY = "--config=configs/pe.py:size=tiny"


def run(*argv: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=ROOT,
                        env=os.environ | {"PYTHONPATH": str(ROOT)}, timeout=300, check=False)


@pytest.fixture(scope="module")
def a_file(tmp_path_factory) -> pathlib.Path:
  path = tmp_path_factory.mktemp("paths") / "a_file"
  path.write_text("not a directory\n")
  return path


@pytest.mark.parametrize("argv, message", [
    (["-m", "nupa_jax.train", TINY, "--workdir={tmp}/w", "--config.train.stepz=5"],
     "error: config has no field train.stepz; did you mean train.steps?"),
    (["-m", "nupa_jax.train", TINY, "--workdir={tmp}/w", "--config.trian.steps=5"],
     "error: config has no field trian; did you mean train?"),
    (["-m", "nupa_jax.train", "--config=configs/pe.py:size=tinyy", "--workdir={tmp}/w"],
     "error: --config=configs/pe.py:size=tinyy: unknown size 'tinyy'; known: tiny,"),
    (["-m", "nupa_jax.train", "--config=configs/pez.py", "--workdir={tmp}/w"],
     "error: --config=configs/pez.py: no file configs/pez.py"),
    (["-m", "nupa_jax.train", TINY, "--workdir={tmp}/w", "--config.train.steps=many"],
     "error: flag --config.train.steps=many: invalid literal for int()"),
    (["-m", "nupa_jax.train", TINY, "--workdirr={tmp}/w"],
     "error: Unknown command line flag 'workdirr'. Did you mean: workdir ?"),
    (["-m", "nupa_jax.train", TINY, "--workdir={file}"],
     "error: --workdir {file} is a file; give a directory"),
    (["-m", "nupa_jax.train", TINY, "--workdir={file}/run"],
     "error: --workdir {file}/run is under a file, {file}; give a directory"),
    (["-m", "nupa_jax.evaluate", "--workdir={file}"],
     "error: {file}/config.json not found: is {file} a training workdir?"),
    (["-m", "nupa_jax.evaluate", "--workdir={tmp}", "--checkpoint=last"],
     "error: --checkpoint='last': expected best, latest or a step"),
    (["-m", "nupa_jax.evaluate", "--workdir={tmp}", "--positions=consecutive,random"],
     "error: --positions=consecutive,random: expected one or more of run, consecutive, "
     "training, training_longest, comma-separated"),
    (["-m", "nupa_jax.evaluate_llm", "--test={tmp}", "--model={tmp}", "--out={file}"],
     "error: --out {file} is a file; give a directory"),
    (["-m", "nupa_jax.evaluate_llm", "--test={tmp}", "--tasks=add_intt", "--export-prompts=p"],
     "error: unknown task 'add_intt'; did you mean add_int"),
    (["-m", "nupa_jax.benchmark", "build", "--out={file}", "--tasks=add_int"],
     "error: --out {file} is a file; give a directory"),
    (["-m", "nupa_jax.benchmark", "build", "--out=gs://bucket/bench", "--tasks=add_int"],
     "error: --out gs://bucket/bench: this command writes a local folder; give a local path "
     "(copy the result to a bucket afterwards)"),
    (["-m", "nupa_jax.benchmark", "build", "--out={tmp}/b", "--tasks=add_intt"],
     "error: unknown task 'add_intt'; did you mean add_int"),
    (["-m", "nupa_jax.benchmark", "score", "--test={tmp}", "--predictions={tmp}/none.jsonl"],
     "error: {tmp}/none.jsonl: No such file or directory"),
    (["-m", "nupa_jax.benchmark", "scor"],
     "error: argument command: invalid choice: 'scor'"),
    (["-m", "nupa_jax.report", "--workdirs={tmp}", "--out={file}"],
     "error: --out {file} is a file; give a directory"),
    (["-m", "nupa_jax.report", "--workdirs={tmp}", "--out={tmp}/r", "--metric=em"],
     "error: argument --metric: invalid choice: 'em'"),
    (["-m", "nupa_jax.report.answers", "{tmp}/none.jsonl"],
     "error: {tmp}/none.jsonl: No such file or directory"),
    (["-m", "nupa_jax.report.answers", "{file}"],
     "error: {file}:1: not a JSON line"),
], ids=lambda value: value[1] if isinstance(value, list) else None)
def test_usage_errors_are_one_line_with_status_2(argv, message, tmp_path, a_file):
  fill = {"tmp": tmp_path, "file": a_file}
  result = run(*(arg.format(**fill) for arg in argv))
  assert (result.returncode, result.stderr.splitlines()) == (2, [result.stderr.strip()]), (
      result.stderr[-3000:])
  assert result.stderr.startswith(message.format(**fill))
  assert not (tmp_path / "w").exists() and not (tmp_path / "b").exists()


def _config() -> ml_collections.ConfigDict:
  return ml_collections.ConfigDict({"train": {"steps": 5, "learning_rate": 1e-3},
                                    "data": {"tasks": {"add_int": 1.0}}})


@pytest.mark.parametrize("path, expected", [
    ("train.steps", None),
    ("data.tasks.add_int", None),
    ("train.stepz", "config has no field train.stepz; did you mean train.steps?"),
    ("data.tasks.add_float", "config has no field data.tasks.add_float; did you mean "
                             "data.tasks.add_int?"),
    ("model.heads", "config has no field model; fields of the config: data, train"),
    ("train.steps.every", "config field train.steps is a value, not a group: it has no field "
                          "every"),
])
def test_missing_field_names_the_nearest_field(path, expected):
  assert cli.missing_field(_config(), path) == expected


def test_output_dir_accepts_new_and_existing_directories_and_urls(tmp_path):
  assert cli.output_dir(tmp_path, "--out") == tmp_path
  assert cli.output_dir(tmp_path / "new" / "deeper", "--out") == tmp_path / "new" / "deeper"
  assert not (tmp_path / "new").exists()  # checked, not created
  assert cli.output_dir("gs://bucket/run", "--workdir") == "gs://bucket/run"


def test_output_dir_refuses_a_url_without_a_file_system():
  with pytest.raises(cli.UsageError, match="--workdir nosuch://bucket/run: .*nosuch"):
    cli.output_dir("nosuch://bucket/run", "--workdir")


def test_output_dir_refuses_a_directory_it_cannot_write_in(tmp_path, monkeypatch):
  locked = tmp_path / "locked"
  locked.mkdir()
  real_access = os.access
  monkeypatch.setattr(os, "access", lambda path, mode: (
      pathlib.Path(path) != locked and real_access(path, mode)))
  with pytest.raises(cli.UsageError, match=r"--out .*locked/run: cannot write in .*locked "
                                           r"\(permission denied\)"):
    cli.output_dir(locked / "run", "--out")
  assert cli.output_dir(tmp_path / "open", "--out") == tmp_path / "open"


def test_usage_errors_print_one_line_and_exit_2(capsys):
  with pytest.raises(SystemExit) as exit_info:
    with cli.usage_errors(ValueError):
      raise ValueError("a\n  multi-line   message")
  assert exit_info.value.code == 2
  assert capsys.readouterr().err == "error: a multi-line message\n"
  with pytest.raises(ZeroDivisionError):  # not a usage error: left alone
    with cli.usage_errors(ValueError):
      raise ZeroDivisionError


def test_check_config_args_builds_the_config_as_the_trainer_does(monkeypatch):
  monkeypatch.chdir(ROOT)
  config = cli.check_config_args([TINY, "--config.train.steps=7", "--config.seed=3"])
  assert (config.train.steps, config.seed) == (7, 3)
  with pytest.raises(cli.UsageError, match="no field train.stepz; did you mean train.steps"):
    cli.check_config_args([TINY, "--config.train.stepz=7"])
