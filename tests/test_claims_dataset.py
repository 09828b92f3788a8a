"""The claims dataset: every record of the executed chapters as one row, written as CSV and JSON that load back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd

from htlib import records as rc
from htlib import scoreboard as sb

BOOK = Path(__file__).resolve().parents[1] / "book"


def test_one_row_per_record_with_its_fields():
    board = sb.scoreboard(BOOK)
    df = sb.claims_dataset(board)
    assert list(df.columns) == list(sb.DATASET_FIELDS)
    records = [(Path(nb).stem, c) for nb, cs in board.claims_by_notebook.items() for c in cs]
    assert len(df) == len(records) > 0
    # read back independently of the dataset: the same (chapter, key) pairs, verdicts, kinds and post-hoc flags
    want = {(ch, c.key): (c.verdict, c.kind, bool(c.revised_because.strip())) for ch, c in records}
    got = {(r.chapter, r.key): (r.verdict, r.kind, bool(r.post_hoc)) for r in df.itertuples()}
    assert got == want
    assert set(df["verdict"]) <= set(rc.VERDICTS) and df["paper_title"].str.len().min() > 0


def test_written_csv_and_json_load_back(tmp_path):
    board = sb.scoreboard(BOOK)
    csv, js = sb.write_claims_dataset(board, tmp_path)
    df = sb.claims_dataset(board)
    back = pd.read_csv(csv, keep_default_na=False)
    assert back.shape == df.shape and list(back.columns) == list(df.columns)
    assert back["key"].tolist() == df["key"].tolist() and back["verdict"].tolist() == df["verdict"].tolist()
    meta = json.loads(js.read_text())
    assert meta["fields"] == list(sb.DATASET_FIELDS) and len(meta["records"]) == len(df)
    assert meta["htlib_version"] and len(meta["written"]) == 10
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=BOOK.parent, capture_output=True, text=True)
    if head.returncode == 0:  # the book's version names the commit it was built from
        assert head.stdout.strip()[:7] in meta["book_version"], (head.stdout, meta["book_version"])
    assert [r["key"] for r in meta["records"]] == df["key"].tolist()
