"""Tests of dganalysis.dro."""
