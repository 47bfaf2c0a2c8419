"""Tests of dganalysis.studies.smoke."""
