"""Trace replay through the service's own placement path (``gpu-extender simulate``).

One job per module:

- ``trace``: openb-format CSV files -> typed rows, with errors naming file/line/column/value;
- ``openb``: openb model names -> catalog or trace-local types; rows -> ``NodeInfo`` /
  ``GpuRequest`` as the decoders would produce them;
- ``scenario``: a platform, its nodes and a workload of pod kinds (``openb_scenario``);
- ``synthetic``: a seeded openb-like trace for machines without the files;
- ``fleet``: the typed, priced fleet scenario (spot-gpu v2026 nodes, generated workload);
- ``inflate``: the arrival order (shuffle, then inflate to ``ratio`` x capacity);
- ``replay``: the loop (snapshot -> fit -> score -> assign -> reserve), one pod at a time;
- ``metrics``: what is logged per arrival and the curve per 1 % of arrived demand;
- ``result``: the JSON output and the human summary;
- ``bound``: the offline limit with node classes pooled (MILP over pod kinds x classes);
- ``config_bound``: the tighter limit over every configuration of shares one GPU can hold;
- ``divergence``: the decisions where two settings of one policy choose different nodes;
- ``command``: the ``simulate`` sub-command.
"""
