#!/usr/bin/python3
"""Runs docs/cpp.md's "Bring your own PyTorch model" example as a reader would paste it.

In a scratch directory laid out like the checkout (tools/, models/, build/ordo), the section's
python blocks run in order in one interpreter, then its sh blocks (the command-line export reads
my_checkpoint.pt, which is saved here as model.state_dict() of a module holding `embedding` and
`encoder` would be). The example must print max |ordo - torch| within the parity bar.

    tests/python/test_readme_example.py docs/cpp.md path/to/ordo
Exit 77 (skipped) where PyTorch is not installed."""

import os
import re
import shutil
from contextlib import redirect_stdout
from io import StringIO
import subprocess
import sys
import tempfile

SECTION = "## Bring your own PyTorch model"


def blocks(readme):
    text = open(readme, encoding="utf-8").read()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:end if end >= 0 else len(text)]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def main():
    readme, ordo = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository: tests/python/..
    root = os.path.dirname(root)
    try:
        import torch
    except ImportError as e:
        print(f"skipped: {e}")
        return 77
    found = blocks(readme)
    python = [code for lang, code in found if lang == "python"]
    shell = [code for lang, code in found if lang == "sh"]
    if len(python) < 2 or len(shell) < 2:
        print(f"FAIL: expected python and sh blocks in {SECTION!r}, found {[lang for lang, _ in found]}")
        return 1

    with tempfile.TemporaryDirectory(prefix="ordo-readme-") as tmp:
        for name in ("tools", "models"):
            os.symlink(os.path.join(root, name), os.path.join(tmp, name))
        os.mkdir(os.path.join(tmp, "build"))
        os.symlink(ordo, os.path.join(tmp, "build", "ordo"))
        os.chdir(tmp)

        scope = {"__name__": "__main__"}
        printed = StringIO()
        with redirect_stdout(printed):
            for code in python:
                exec(compile(code, os.path.basename(readme), "exec"), scope)
        print(printed.getvalue(), end="")
        match = re.search(r"max \|ordo - torch\| = (\S+)", printed.getvalue())
        if not match:
            print("FAIL: the example did not print max |ordo - torch|")
            return 1
        if not float(match.group(1)) <= 5e-5:  # the parity bar 5e-5 · max(1, max|y|), at its strictest
            print(f"FAIL: max |ordo - torch| = {match.group(1)} is above 5e-5")
            return 1

        state = {"embedding.weight": scope["embedding"].weight,
                 **{f"encoder.{k}": v for k, v in scope["encoder"].state_dict().items()}}
        torch.save(state, "my_checkpoint.pt")
        from_module = {f: open(os.path.join("my_model", f), "rb").read() for f in ("config.json", "model.safetensors")}
        for code in shell:
            if "export_pytorch.py" in code:  # let the command line write the directory afresh
                shutil.rmtree("my_model")
            r = subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True)
            print(r.stdout[:300], r.stderr, sep="")
            if r.returncode != 0:
                print(f"FAIL: exit {r.returncode} from\n{code}")
                return 1
        for f, data in from_module.items():  # the command line must write what the module export wrote
            path = os.path.join("my_model", f)
            if not os.path.isfile(path) or open(path, "rb").read() != data:
                print(f"FAIL: the command-line export's {path} differs from the python export's")
                return 1
    print("ok: the README example runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
