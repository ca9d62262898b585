"""The `karmada-estimator` command line: `options` (the flags, one function per flag group,
their checks, and what they assemble: feature gates, logging options, the server's
configuration) and `main` (flags in, exit status out: parse -> validate -> build the config
-> estimator.service.launch serves). The Go value syntax the flags use is estimator/goflags.py;
`estimator/__main__.py` is only the program's entry.
"""
