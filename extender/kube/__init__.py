"""Everything that knows the shape of Kubernetes objects, and does no I/O: decoding Pods and
Nodes into domain values, node label conventions, the annotations we persist, and accessors
for object metadata (``objects``). Calls to the API server live in ``extender.apiserver``."""
