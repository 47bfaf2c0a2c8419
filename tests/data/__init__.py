"""Tests of dganalysis.data."""
