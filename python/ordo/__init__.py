"""ordo: a small transformer encoder you can read, from Python.

    import ordo
    model = ordo.Model()                      # the default model
    v = model.encode(["the cat sat on the mat"])  # float32 (1, d)
    model.fill("the cat sat on the <mask>.")  # [[(piece, id, prob), ...]]

The module is a thin client of the C++ library (lib/ordo/ordo.h), like the `ordo` command:
the same numbers, the same error messages (ordo.InputError). docs/python.md has the details.
"""
import os as _os
import re as _re
import resource as _resource

# Under a memory limit (ulimit -v, ulimit -d) OpenBLAS's worker threads, started as the library loads,
# retry a failed 128 MiB mapping for ever and the process never ends; ordo's own threads do the
# work, so the workers are kept from starting, as `ordo` keeps them (<ordo/ordo.h>,
# start_without_openblas_workers): the environment OpenBLAS reads as it loads, set just before.
if any(_resource.getrlimit(r)[0] != _resource.RLIM_INFINITY for r in (_resource.RLIMIT_AS, _resource.RLIMIT_DATA)):
    _os.environ["OPENBLAS_NUM_THREADS"] = "1"


# A junk thread count for the libraries below ordo (OMP_NUM_THREADS=abc) is refused with the words of
# `ordo` before the library loads, as `ordo` refuses it before main (<ordo/ordo.h>,
# bad_thread_variable): loading it first would let libgomp print its own warning.


def _thread_variable_error():
    for name in ("OMP_NUM_THREADS", "OMP_THREAD_LIMIT", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS"):
        value = _os.environ.get(name)
        if value is None or (value == "" and not name.startswith("OMP_")):
            continue
        items = value.split(",") if name == "OMP_NUM_THREADS" else [value]
        if all(_re.fullmatch(r"[ \t\n\r\f\v]*\+?[0-9]*[1-9][0-9]*[ \t\n\r\f\v]*", i) for i in items):
            continue
        rule = "a whole number from 1, or a list of them such as 4,2" if name == "OMP_NUM_THREADS" else \
            "a whole number from 1"
        return f"{(name + '=' + value)[:60]}: must be {rule} (or unset it)"
    return None


if _thread_variable_error():
    raise ImportError(_thread_variable_error())

# numpy now rather than at the first array the module returns: its import (~30 ms warm, 200 ms on a
# busy machine) was most of a fresh process's first Model.encode.
import numpy as _numpy  # noqa: E402,F401

from . import _location  # noqa: E402  (after the environment above, as the library loads)
from ._ordo import (InputError, Model, __version__, default_model_dir, num_threads, positional_encoding,
                    set_num_threads)
from ._ordo import _set_default_model_dir

# The build tree's model, or (installed) the one installed beside this package: see _location.py.
_set_default_model_dir(_os.path.normpath(_os.path.join(_os.path.dirname(__file__), _location.MODEL_DIR)))

# Shown (and pickled) as ordo.Model, ordo.InputError: the names a reader imports.
InputError.__module__ = Model.__module__ = __name__

__all__ = ["InputError", "Model", "default_model_dir", "num_threads", "positional_encoding", "set_num_threads",
           "__version__"]
