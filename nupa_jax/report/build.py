"""Make a whole report: load inputs, group seeds, write tables, draw figures, write the index.

This is the one function the CLI calls; tests and notebooks can call it too.
"""
from collections.abc import Callable
import pathlib
import re

from nupa_jax.report import figures, index, loading, scales, tables
from nupa_jax.report.grouping import Group, group_entries


def _slugs(groups: list[Group]) -> list[str]:
  """File-name-safe, unique names for the groups' figures (`pe=alibi` -> `pe-alibi`)."""
  out = []
  for group in groups:
    slug = re.sub(r"[^A-Za-z0-9._]+", "-", group.label).strip("-")[:80] or "run"
    candidate, n = slug, 1
    while candidate in out:
      n += 1
      candidate = f"{slug}-{n}"
    out.append(candidate)
  return out


def make_report(inputs: list[pathlib.Path], out: pathlib.Path, metric: str = "exact_match",
                labels: list[str] | None = None,
                log: Callable[[str], None] = print) -> pathlib.Path:
  """Writes figures/, tables/ and index.md under `out`; returns the index's path."""
  scales.get(metric)  # an unknown metric fails before any work
  entries = loading.load(inputs, log)
  groups = group_entries(entries, labels)
  fig_dir, table_dir = out / "figures", out / "tables"
  fig_dir.mkdir(parents=True, exist_ok=True)
  table_dir.mkdir(parents=True, exist_ok=True)
  log(f"{len(entries)} runs in {len(groups)} settings; writing tables to {table_dir}")
  comparisons = {m: tables.comparison_table(groups, m, table_dir) for m in loading.METRICS}
  run_tables = tables.run_tables(entries, table_dir)
  series = tables.series_tables(groups, metric, table_dir)

  slugs = _slugs(groups)
  curved = [g for g in groups if all(len(e.history) >= 2 for e in g.entries)]
  mapped = [g for g in groups if len(g.tasks) > 1 or g.kind == "report"]
  todo = 1 + len(curved) + len(mapped)
  done = 0

  def draw(what: str, plot: Callable[..., list[pathlib.Path]], *args) -> list[pathlib.Path]:
    nonlocal done
    done += 1
    log(f"figure {done}/{todo}: {what}")
    return plot(*args)

  art = index.Artifacts(
      metric=metric,
      digits_figure=draw("metric vs digit length", figures.plot_digits, groups,
                         tables.all_tasks(groups), metric, fig_dir / f"digits_{metric}"),
      curves=[(g, draw(f"training curves of {g.label}", figures.plot_curves, g, metric,
                       fig_dir / f"curves_{metric}_{slug}") if g in curved else [])
              for g, slug in zip(groups, slugs)],
      heatmaps=[(g, draw(f"heatmap of {g.label}", figures.plot_heatmap, g, metric,
                         fig_dir / f"heatmap_{metric}_{slug}"))
                for g, slug in zip(groups, slugs) if g in mapped],
      run_tables=run_tables, comparison_markdown=comparisons[metric][0],
      comparisons={m: files for m, (_, files) in comparisons.items()},
      series=series)
  path = index.write_index(out, entries, groups, art)
  log(f"wrote {path}")
  return path
