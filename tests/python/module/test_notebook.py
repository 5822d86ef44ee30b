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
    # (one figure of four panels), fill's bars.
    assert len(figures) == 3, f"{len(figures)} figures"
