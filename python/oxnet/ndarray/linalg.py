"""``mx.nd.linalg``: every registry operator named ``_linalg_NAME`` as
``NAME``, as in MXNet; e.g. ``mx.nd.linalg.gemm2`` is
``mx.nd._linalg_gemm2`` (also ``mx.nd.linalg_gemm2``). Filled in by
``oxnet.ndarray._ops.refresh``.

The operators work on batches of matrices over the trailing two axes
(``gemm`` and ``gemm2`` take the row axis from ``axis``), in float32 and
float64: ``gemm``, ``gemm2``, ``syrk``, ``trmm``, ``trsm``, ``sumlogdiag``,
``potrf``, ``potri``, ``gelqf``, ``syevd``, ``inverse``, ``det``,
``slogdet``, ``extractdiag``, ``makediag``, ``extracttrian`` and
``maketrian``.
"""
