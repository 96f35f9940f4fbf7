"""Helpers the tests share: a live server, HTTP assertions, job polling, and the independent oracles."""
