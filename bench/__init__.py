"""The benchmark: `python -m bench` (`make bench`); see README.md, section Benchmark."""
