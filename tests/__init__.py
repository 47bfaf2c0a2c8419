"""dganalysis test suite (a regular package, so ``tests.reference`` is ours even when an installed
distribution such as baycomp ships a top-level ``tests`` package)."""
