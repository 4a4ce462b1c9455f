"""Benchmarks side by side with TanStack AI (issue 8). Run them all with `make bench`."""
