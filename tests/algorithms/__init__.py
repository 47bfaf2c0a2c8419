"""Tests of dganalysis.algorithms."""
