"""One BLAS thread for a block of many small matrix products.

The statistics here are thousands of small products (a (1001, 40) weight matrix
times a (40, 25) table, a Poisson CDF search, a CG step): OpenBLAS splits each over
its threads, whose wake-ups cost more than the product on a busy machine (bench:
scipy's CG in a rater fit 3 times slower; the cold agreement dashboard's alpha
coincidences 0.38 s for 102 products). Our own thread pools parallelise whole
groups instead. One thread also makes the figures independent of the machine's
CPU count (OpenBLAS's split can change a sum's last bit).
"""

from __future__ import annotations

from contextlib import nullcontext


def one_blas_thread():
    """A context manager limiting BLAS to one thread for the block (process-wide,
    restored on exit); a no-op without threadpoolctl (listed in requirements.txt)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
