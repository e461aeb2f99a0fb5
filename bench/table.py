"""The docs' benchmark table, regenerated from a whole run's JSON.

    python -m bench --runs 2 --json > run.json
    python bench/table.py run.json                          # print the Markdown table
    python bench/table.py run.json --update docs/performance.md

--update replaces what lies between the `[//]: # (bench-table:start)` and `[//]: # (bench-table:end)` lines (Markdown comments)
lines of the page (the file is written whole or not at all), so the page shows the run's own figures,
with its date, machine and load average, and nothing typed in by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.whole_file import write_text_whole  # noqa: E402 (after the path above)

START, END = "[//]: # (bench-table:start)", "[//]: # (bench-table:end)"


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "x":
        return f"{value:.2f}x"
    digits = 2 if unit == "GB" else (1 if unit in ("ms", "/s", "GFLOP/s") else 3)
    return f"{value:,.{digits}f} {unit}".rstrip()


def table(run: dict) -> str:
    """The run's figures as Markdown: a sentence saying when and where it ran, then one row per figure."""
    load = run.get("load_average") or [None, None]
    when = run.get("date_utc", "an unrecorded date")
    machine = run.get("machine", "an unrecorded machine")
    cpus = run.get("cpus", "?")
    loads = " and ".join("-" if value is None else f"{value:.2f}" for value in load)
    options = (" --quick" if run.get("quick") else "") + (f" --only {run['only']}" if run.get("only") else "")
    lines = [f"`python -m bench --runs {run.get('runs')}{options}`, {when} UTC, "
             f"{machine}, {cpus} CPUs, load average {loads} (1-minute, at the start and at the end), "
             f"{run.get('seconds', 0):.0f} s.", "",
             "| figure | median (min - max, n) | target | result | measured beside it |",
             "| --- | --- | --- | --- | --- |"]
    for figure in run["figures"]:
        unit, values = figure["unit"], figure["values"]
        if values:
            cell = (f"{_number(figure['median'], unit)} ({_number(figure['min'], unit)} - "
                    f"{_number(figure['max'], unit)}, n={len(values)})")
        else:
            cell = figure.get("error") or figure.get("skipped") or "-"
        beside = figure.get("beside", "").replace("|", "/")
        lines.append(f"| {figure['name']} | {cell} | {figure['target'] or '-'} | {figure['verdict']} | {beside} |")
    return "\n".join(lines)


def update(page: Path, text: str) -> None:
    """Replace the marked block of `page` with `text`, writing the file whole or not at all."""
    content = page.read_text(encoding="utf-8")
    if content.count(START) != 1 or content.count(END) != 1 or content.index(START) > content.index(END):
        raise SystemExit(f"bench/table.py: {page} needs one '{START}' line before one '{END}' line")
    head, rest = content.split(START, 1)
    tail = rest.split(END, 1)[1]
    new = f"{head}{START}\n\n{text}\n\n{END}{tail}"  # blank lines: the markers stay out of the table
    write_text_whole(page, new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the JSON that `python -m bench --json` printed")
    parser.add_argument("--update", type=Path, metavar="PAGE", help="replace the marked table in this Markdown page")
    args = parser.parse_args(argv)
    try:
        run = json.loads(args.run.read_text(encoding="utf-8"))
        text = table(run)
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"bench/table.py: {args.run} is not a `python -m bench --json` run ({error})", file=sys.stderr)
        return 2
    if args.update:
        update(args.update, text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
