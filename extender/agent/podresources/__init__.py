"""The kubelet's PodResources v1 API: ``api.proto`` copied from upstream and the stubs
generated from it (hack/gen-podresources.sh). Import the stubs only through
``extender.agent.kubelet``."""
