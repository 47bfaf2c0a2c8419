"""Tests of dganalysis.protocols."""
