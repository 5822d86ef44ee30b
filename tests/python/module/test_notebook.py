"""docs/ordo.ipynb runs from top to bottom (jupyter nbconvert --execute) without an error, and draws its figures."""
import json
import os
import subprocess

from conftest import ROOT

NOTEBOOK = os.path.join(ROOT, "docs", "ordo.ipynb")


def test_notebook_runs_and_draws(tmp_path):
    with open(NOTEBOOK) as f:
        committed = json.load(f)
    # Committed without outputs: the file stays small and reviewable.
    assert all(not c.get("outputs") for c in committed["cells"] if c["cell_type"] == "code")
    out = tmp_path / "ordo.ipynb"
    run = subprocess.run(["jupyter", "nbconvert", "--to", "notebook", "--execute", "--output", str(out),
                          "--ExecutePreprocessor.timeout=300", NOTEBOOK], capture_output=True, text=True,
                         cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    cells = json.loads(out.read_text())["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"]
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    # The pieces' table is text; the figures: the PE heatmap, attention with and without positions
    # (one figure of four panels), fill's bars, the piece-before heads inside and past the training length.
    assert len(figures) == 4, f"{len(figures)} figures"
    # The walkthrough's numbers (docs/walkthrough.md, sections 2, 5 and 8), printed by the notebook's own
    # calls: fill's example; head 1 of layer 1 from the inside (its row for ▁on, A·v); the four parts of its
    # scores at offset -1; the by-distance table over 600 held-out lines; the piece-before heads of the
    # sinusoidal, rotary and ALiBi-pairs models inside and past the training length. And the ablation's
    # sentence scores its markdown quotes.
    printed = "".join(t for o in outputs if o["output_type"] == "stream" for t in o["text"])
    for line in ["▁ground 2.71%  ▁sky 1.72%  ▁sea 1.58%  ▁head 1.19%  ▁sun 1.16%",
                 "scaled scores of row ▁on: [ 2.292  6.112  9.026  6.284  2.922 -0.909]",
                 "weights of row ▁on:       [0.0011 0.0484 0.8911 0.0574 0.002  0.    ]",
                 "head output = A·v: True",
                 "    -1    0.929   -1.118    0.727    6.575    7.113",
                 "     1    1.104   -0.767    0.627    0.695    1.659",
                 "    1    0   0.000 (  0.0)  0.001 (  0.0)  0.151 (  9.2)  0.883 ( 98.2)  0.028 (  0.3)",
                 "    1    1   0.138 (  2.8)  0.713 ( 96.3)  0.171 (  8.6)  0.010 (  0.0)  0.001 (  0.0)",
                 "rows with a key at each offset: [6134 6734 7334 6734 6134]",
                 "1,0                    ▁ground 3.07%                  -47.288   -46.764",
                 "1,1                    ▁water 1.10%                   -34.819   -34.851",
                 "sinusoidal   layer 1 head 1: piece before 0.464 at 0-31, 0.075 at 32+",
                 "rotary       layer 1 head 0: piece before 0.446 at 0-31, 0.445 at 32+",
                 "ALiBi pairs  layer 1 head 0: piece before 0.594 at 0-31, 0.582 at 32+"]:
        assert line in printed, f"the notebook does not print {line!r}"
