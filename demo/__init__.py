"""`make demo`: a local control plane with the extender, a mixed GPU fleet, the example pods
from manifests/examples/, and a table of where each pod landed (or why it is Pending)."""
