"""The NUPA tasks: one registry of every (kind, representation) pair of the paper.

    task = tasks.get("add_int")           # or an alias: "add_Integer_Integer_Integer"
    a, b = task.sample(rng, 12)           # rng: numpy.random.Generator
    text = task.prompt(a, b) + " " + task.solve(a, b)

Families register themselves on import: arithmetic, comparison, digits, conversion.
"""
from nupa_jax.tasks import arithmetic as _arithmetic  # noqa: F401  (registers tasks)
from nupa_jax.tasks import comparison as _comparison  # noqa: F401
from nupa_jax.tasks import conversion as _conversion  # noqa: F401
from nupa_jax.tasks import digits as _digits  # noqa: F401
from nupa_jax.tasks.registry import FORMAT_PROMPTS, KINDS, PROMPTS, Task, get, kinds, names


def parse_prompt(task: Task | str, text: str) -> tuple[str, str | None, str | None]:
  """(a, b, answer) of a question text `prompt(a, b) [+ " " + answer]` of `task`."""
  return (get(task) if isinstance(task, str) else task).parse_prompt(text)


__all__ = ["FORMAT_PROMPTS", "KINDS", "PROMPTS", "Task", "get", "kinds", "names", "parse_prompt"]
