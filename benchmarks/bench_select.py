"""Row-wise k-smallest selection on a CPU: ``lax.top_k`` against :func:`jaxdml.linalg.smallest_k`.

XLA's CPU ``top_k`` has a fast kernel for float32 only; in float64 it sorts every row. The k-NN
searches of jaxdml (``jaxdml.neighbors``, the batched k-NN of ``MultiDML_kNN`` and ``jaxdml.tune``) run in
float64 where exactness matters, so ``smallest_k`` takes ``k`` masked ``argmin`` passes there. This
script times both, compiled and warm (median of repeats), for block shapes the searches use, and checks
that they select the same indices.

    python benchmarks/bench_select.py [--out benchmarks/results/bench_select.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import machine, markdown_table, write_json  # noqa: E402

SHAPES = [(25 * 64, 192), (1024, 5000)]
KS = [1, 3, 10, 30]


def _median_ms(fn, D, repeats=7):
    import jax

    jax.block_until_ready(fn(D))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(D))
        times.append(time.perf_counter() - t0)
    return 1e3 * sorted(times)[len(times) // 2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bench_select.json"))
    args = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxdml.linalg import smallest_k

    rows = []
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        for dtype in ("float32", "float64"):
            for shape in SHAPES:
                D = jnp.asarray(rng.normal(size=shape).astype(dtype))
                for k in KS:
                    top = jax.jit(lambda D, k=k: jax.lax.top_k(-D, k)[1])
                    ours = jax.jit(lambda D, k=k: smallest_k(D, k)[1])
                    same = bool(np.array_equal(np.asarray(top(D)), np.asarray(ours(D))))
                    a, b = _median_ms(top, D), _median_ms(ours, D)
                    rows.append(dict(dtype=dtype, rows=shape[0], cols=shape[1], k=k, top_k_ms=a, smallest_k_ms=b,
                                     ratio=a / b, same_indices=same))
                    print(rows[-1], flush=True)
    cols = [("dtype", "dtype", ""), ("rows", "rows", "d"), ("cols", "cols", "d"), ("k", "k", "d"),
            ("top_k_ms", "lax.top_k (ms)", ".2f"), ("smallest_k_ms", "smallest_k (ms)", ".2f"),
            ("ratio", "top_k / smallest_k", ".1f"), ("same_indices", "same indices", "")]
    print(markdown_table(rows, cols))
    write_json(args.out, dict(machine=machine(), backend=jax.default_backend(), rows=rows))


if __name__ == "__main__":
    main()
