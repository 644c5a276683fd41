"""scipy.sparse through ``smserve.scipy_sparse``: in a fresh interpreter (this one imported
scipy long ago) it loads none of numpy's f2py, testing, ma or polynomial; numpy lists its
submodules again afterwards; and scipy's copy of numpy's namespace still answers every name
it answered, importing on demand what it did not import."""

from __future__ import annotations

import json
import subprocess
import sys

IMPORT_AND_REPORT = """
import json, sys
import numpy
from smserve.scipy_sparse import sparse, UNLISTED_WHILE_SCIPY_IMPORTS
loaded = sorted(name for name in ("f2py", "testing", "ma", "polynomial", "char", "rec")
                if f"numpy.{name}" in sys.modules)
listed = [name in numpy.__all__ and name in dir(numpy) for name in UNLISTED_WHILE_SCIPY_IMPORTS]
copy = sys.modules["scipy._lib.array_api_compat.numpy"]
answered = copy.testing is numpy.testing and copy.ma is numpy.ma and copy.mean is numpy.mean
matrix = sparse.csr_matrix(numpy.eye(3, dtype=numpy.float32))
print(json.dumps({"loaded": loaded, "listed": all(listed), "answered": answered,
                  "sum": float(matrix.sum())}))
"""


def test_scipy_sparse_loads_without_numpys_unused_submodules() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_AND_REPORT],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == {"loaded": [], "listed": True, "answered": True, "sum": 3.0}


def test_a_process_that_imported_scipy_first_gets_it_as_it_is() -> None:
    code = (
        "import scipy.sparse, numpy.testing, sys; import smserve.scipy_sparse as s; "
        "print(s.sparse is scipy.sparse, 'numpy.f2py' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True"], done.stderr
