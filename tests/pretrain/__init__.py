"""Tests of dganalysis.pretrain."""
