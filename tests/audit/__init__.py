"""Tests of dganalysis.audit."""
