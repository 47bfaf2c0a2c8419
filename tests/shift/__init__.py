"""Tests of dganalysis.shift."""
