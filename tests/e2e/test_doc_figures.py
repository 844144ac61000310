"""The figures the README and docs/evaluation.md quote for `vitattn eval` are what it writes.

Each document names the command it ran (in backticks, or in a ```sh block) and shows a table of
methods and metrics rounded for reading. The command is run here as written, from the
repository root with the output folder moved to a scratch folder, and every figure of the table
must be eval.csv's value rounded the way the table shows it. A method changed without its
documents (a new γ default, a changed metric) fails here instead of leaving stale numbers.

Needs the bundled model, images/ and data/masks (all in the repository). Run:
  VITATTN_BIN=build/dev/vitattn /usr/bin/python3 -m pytest -q tests/e2e/test_doc_figures.py
"""
import csv
import re
import shlex

import pytest

import harness

REPO = harness.REPO

# What a table's column heads say, up to the first space or bracket, to eval.csv's metric names.
COLUMN_METRIC = {
    "pixel_accuracy": "pixel_accuracy", "miou": "miou", "map": "map",
    "positive_auc": "positive_auc", "positive": "positive_auc",
    "negative_auc": "negative_auc", "negative": "negative_auc",
    "sanity_spearman": "sanity_spearman", "sanity:": "sanity_spearman",
}
EVAL_COMMAND = re.compile(r"(vitattn eval --model models/\S+\.safetensors [^`\n]*?-o [^`\s]+)")


def eval_command(text):
    """The one `vitattn eval --model models/….safetensors … -o OUT` the document runs (with the bundled
    model: its example with figures), and where it stands."""
    found = list(EVAL_COMMAND.finditer(text))
    assert len(found) == 1, f"expected one `vitattn eval --model FILE … -o OUT` command, found {len(found)}"
    return shlex.split(found[0].group(1)), found[0].start()


def eval_table(text):
    """{method: {metric: cell text}} of the first table whose first column head is `method`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| method |"))
    heads = [h.strip().lower() for h in lines[start].strip("|").split("|")]
    metrics = [COLUMN_METRIC[h.split(" ")[0].split("(")[0]] for h in heads[1:]]
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0]] = dict(zip(metrics, cells[1:]))
    assert table, "the table has no rows"
    return table


def run_eval(args, out):
    """Runs the document's command with its -o replaced by `out`; eval.csv as {method: {metric: value}}."""
    args = list(args[1:])  # after `vitattn`
    args[args.index("-o") + 1] = str(out)
    harness.run_process(*args, cwd=REPO, expect=0)
    values = {}
    with open(out / "eval.csv", newline="") as f:
        for row in csv.DictReader(f):
            values.setdefault(row["method"], {})[row["metric"]] = float(row["value"])
    return values


def same_figure(cell, value):
    """The cell is the value rounded to the cell's own decimals ('—' for a value eval leaves out),
    within a hair of the rounding boundary: on another CPU (AVX2, another GEMM kernel) the value may
    differ in its last bits, and a value at a boundary could round either way."""
    if value is None:
        return cell == "—"
    cell = cell.replace("−", "-")
    decimals = len(cell.split(".")[1]) if "." in cell else 0
    return abs(value - float(cell)) <= 0.5 * 10.0 ** -decimals + 1e-6 * max(1.0, abs(value))


@pytest.mark.parametrize("document", ["README.md", "docs/evaluation.md"])
def test_eval_table_is_what_eval_writes(document, tmp_path):
    text = (REPO / document).read_text()
    command, at = eval_command(text)
    table = eval_table(text[at:])
    values = run_eval(command, tmp_path / "eval")
    wrong = []
    for method, cells in table.items():
        assert method in values, f"{document}: method {method} is not in eval.csv"
        for metric, cell in cells.items():
            value = values[method].get(metric)
            if not same_figure(cell, value):
                wrong.append(f"{method} {metric}: the document says {cell}, eval.csv {value}")
    assert not wrong, f"{document}: " + "; ".join(wrong)
