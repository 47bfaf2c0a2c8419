"""Tests of dganalysis.sweep."""
