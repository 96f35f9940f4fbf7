"""Synthetic problems with closed-form solutions, for the verification jobs' simulators."""
