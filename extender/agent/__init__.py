"""The node agent (``gpu-extender agent``): NVML -> the ``gpu-extender.io/gpus`` annotation,
GPU processes -> pods, declared vs observed VRAM, and the kubelet's PodResources answers ->
corrections of our assignments. Imports only downward: backends and parsers at the bottom, the
loop and the command on top."""
