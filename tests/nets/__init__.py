"""Tests of dganalysis.nets."""
