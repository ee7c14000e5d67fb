"""An evaluation over 2 jax processes: each question scored once, whatever the mesh.

Rows split over the processes (`data`) or replicated on every device (`tensor`, whose axis
then spans both processes): either way a row is scored by the process holding its first
replica, the two processes' answers together hold every question exactly once, and both
gather the summary that one process computes alone (evaluation_multihost_main.py evaluates).
"""
import pathlib

from tests.multihost_testing import free_port, launch, result

MAIN = pathlib.Path(__file__).resolve().parent / "evaluation_multihost_main.py"


def test_two_processes_score_each_question_once_on_any_mesh():
  port = free_port()
  # Started together: the three processes overlap their start-up.
  single = launch(MAIN, 0, 1, 0, 4)
  pair = [launch(MAIN, i, 2, port, 2) for i in range(2)]
  alone = result(single)
  first, second = (result(p) for p in pair)
  for axis in ("data", "tensor"):
    everything = alone[axis]["ids"]
    assert len(everything) == len(set(everything)) == 54  # 30 additions, 24 maxima
    assert not set(first[axis]["ids"]) & set(second[axis]["ids"])
    assert sorted(first[axis]["ids"] + second[axis]["ids"]) == sorted(everything)
    assert first[axis]["per_digit"] == second[axis]["per_digit"] == alone[axis]["per_digit"]
  assert first["data"]["ids"] and second["data"]["ids"]  # split rows: each scores its own
  # The stand-in drops a digit of the even answers: some lengths are neither all right nor
  # all wrong, so the summaries compare real numbers.
  scores = {s["exact_match"] for per in alone["data"]["per_digit"].values() for s in per.values()}
  assert scores - {0.0, 1.0}
