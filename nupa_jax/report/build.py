"""Make a whole report: load inputs, group seeds, write tables, draw figures, write the index.

This is the one function the CLI calls; tests and notebooks can call it too.
"""
from collections.abc import Callable
import pathlib
import re

from nupa_jax.report import figures, index, loading, paper, paper_tables, scales, tables
from nupa_jax.report.grouping import group_entries


def _slugs(names: list[str]) -> list[str]:
  """File-name-safe, unique names for figures and tables (`pe=alibi` -> `pe-alibi`)."""
  out = []
  for name in names:
    slug = re.sub(r"[^A-Za-z0-9._]+", "-", name).strip("-")[:80] or "run"
    candidate, n = slug, 1
    while candidate in out:
      n += 1
      candidate = f"{slug}-{n}"
    out.append(candidate)
  return out


def make_report(inputs: list[pathlib.Path], out: pathlib.Path, metric: str = "exact_match",
                labels: list[str] | None = None,
                log: Callable[[str], None] = print,
                papers: list[pathlib.Path] = ()) -> pathlib.Path:
  """Writes figures/, tables/ and index.md under `out`; returns the index's path.

  `papers` are paper files (see `paper`): each of their tables is written with our values
  beside the paper's. Every input is checked before anything is written.
  """
  scales.get(metric)  # an unknown metric or paper file fails before any work
  specs = [t for path in papers for t in paper.read_paper(path)]
  entries = loading.load(inputs, log)
  groups = group_entries(entries, labels)
  beside_paper = [paper_tables.compare(t, groups) for t in specs]
  fig_dir, table_dir = out / "figures", out / "tables"
  fig_dir.mkdir(parents=True, exist_ok=True)
  table_dir.mkdir(parents=True, exist_ok=True)
  log(f"{len(entries)} runs in {len(groups)} settings; writing tables to {table_dir}")
  comparisons = {m: tables.comparison_table(groups, m, table_dir) for m in loading.METRICS}
  run_tables = tables.run_tables(entries, table_dir)
  series = tables.series_tables(groups, metric, table_dir)
  paper_slugs = _slugs([c.table.title for c in beside_paper])
  paper_files = [paper_tables.write(c, table_dir / f"paper_{slug}")
                 for c, slug in zip(beside_paper, paper_slugs)]
  for c in beside_paper:
    for note in c.notes:
      log(f"note: {c.table.origin}: {note}")

  slugs = _slugs([g.label for g in groups])
  curved = [g for g in groups if all(len(e.history) >= 2 for e in g.entries)]
  mapped = [g for g in groups if len(g.tasks) > 1 or g.kind == "report"]
  todo = 2 + len(curved) + len(mapped)
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
      losses_figure=draw("losses vs samples seen", figures.plot_losses, groups,
                         fig_dir / "losses"),
      curves=[(g, draw(f"training curves of {g.label}", figures.plot_curves, g, metric,
                       fig_dir / f"curves_{metric}_{slug}") if g in curved else [])
              for g, slug in zip(groups, slugs)],
      heatmaps=[(g, draw(f"heatmap of {g.label}", figures.plot_heatmap, g, metric,
                         fig_dir / f"heatmap_{metric}_{slug}"))
                for g, slug in zip(groups, slugs) if g in mapped],
      run_tables=run_tables, comparison_markdown=comparisons[metric][0],
      comparisons={m: files for m, (_, files) in comparisons.items()},
      series=series, paper=list(zip(beside_paper, paper_files)))
  path = index.write_index(out, entries, groups, art)
  log(f"wrote {path}")
  return path
