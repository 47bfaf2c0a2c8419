"""FAKE inputs for the paper profile's smoke run: dataset trees (:mod:`.trees`) and weight files in the
published layouts (:mod:`.weights`); the run itself is :mod:`.run`.

Everything here is made of random numbers and exists only so that ``dganalysis run --profile paper --smoke``
executes the paper path end to end; its numbers mean nothing and are labelled FAKE.
"""
