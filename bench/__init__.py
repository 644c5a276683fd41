"""smserve's benchmarks and robustness suites, grouped by purpose (see bench/README.md).

A package so that its scripts share code by ordinary imports; each script also runs as a
file (``.venv/bin/python bench/<group>/<script>.py``), putting the repository root first on
``sys.path``. Nothing here is imported by smserve itself."""
