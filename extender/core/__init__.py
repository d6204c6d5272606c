"""The placement core: pure functions over immutable snapshots (no HTTP, no API calls).

``fit`` says which nodes can host a request and why not the others; ``scoring`` ranks the ones
that can; ``assign`` picks the GPU(s) on the chosen node. The service, the simulator and the
benchmarks all call these same kernels.
"""
