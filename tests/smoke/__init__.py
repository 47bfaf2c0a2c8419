"""Tests of dganalysis.smoke."""
