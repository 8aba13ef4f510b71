"""The compiled (numba) loops: packed runs (``packed``), the request loop (``driver``), cache models
(``caches``), one loop over a whole corpus (``corpus``), per-request traces (``trace``), each policy's setup and
decide picked while the loop is compiled for that policy (``select``, from the generated
``replay.policies.dispatch``), the first-use compile notice (``compiling``) and the only way to a policy's
parameters (``dispatched``: it refuses a policy the generated ``replay.policies.dispatch`` does not run).
Sweep rows built from them are ``replay.sweeps.point_rows``."""
