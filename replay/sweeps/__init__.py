"""Parameter sweeps: specs from TOML, parallel execution, resumable results in DuckDB and Parquet."""

from replay.sweeps.runner import SweepOutcome, run_sweep
from replay.sweeps.spec import SweepSpec, from_dict, load_spec

__all__ = ["SweepOutcome", "SweepSpec", "from_dict", "load_spec", "run_sweep"]
