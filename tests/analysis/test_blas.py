"""analysis.stats.blas: one BLAS thread inside the block, the previous count after."""

import numpy as np
from threadpoolctl import threadpool_info

from analysis.stats.blas import one_blas_thread


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_one_blas_thread_limits_and_restores():
    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded
    before = _blas_threads()
    assert before  # numpy's OpenBLAS is seen
    with one_blas_thread():
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before
