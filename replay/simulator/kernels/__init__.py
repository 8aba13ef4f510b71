"""The compiled (numba) loops: packed runs (``packed``), the request loop (``driver``), cache models
(``caches``), one loop over a whole corpus (``corpus``), per-request traces (``trace``) and the policy dispatch
(``dispatch``). Sweep rows built from them are ``replay.sweeps.point_rows``."""
