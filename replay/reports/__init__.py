"""Reports: charts, the regression gate (check), the per-run pages and the show views."""
