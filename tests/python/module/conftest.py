"""What the tests of `import ordo` share: the built `ordo` command (their reference) and the model.

ctest runs them with PYTHONPATH=<build>/python and ORDO_BINARY=<build>/ordo (python/CMakeLists.txt)."""
import json
import os
import subprocess

import numpy as np
import pytest

import ordo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ORDO = os.environ.get("ORDO_BINARY", "")


def run_ordo(*args, json_lines=False, **kw):
    """The command's stdout: parsed JSON (one object, or a list with json_lines=True), else bytes."""
    assert ORDO, "set ORDO_BINARY to the built ordo"
    out = subprocess.run([ORDO, *args], check=True, capture_output=True, **kw).stdout
    if json_lines:
        return [json.loads(line) for line in out.decode().splitlines()]
    return out


@pytest.fixture(scope="session")
def model():
    return ordo.Model()


@pytest.fixture(scope="session")
def model_dir(model):
    return model.path


def max_diff(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b), initial=0.0))
