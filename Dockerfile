# gpu-extender images, one per role (each installs only its role's extra, pyproject.toml):
#
#   docker build -t gpu-extender:0.1.0 .                          # the extender (serve, shadow)
#   docker build --target agent -t gpu-extender-agent:0.1.0 .     # the node agent (NVML, gRPC)
#   docker build --target webhook -t gpu-extender-webhook:0.1.0 . # the admission webhook
#
# The chart points each workload at its own (image, agent.image, webhook.image).
FROM python:3.11-slim AS source
WORKDIR /app
COPY pyproject.toml README.md ./
COPY extender ./extender
RUN useradd --uid 65532 --no-create-home extender

FROM source AS agent
RUN pip install --no-cache-dir '.[agent]'
USER 65532
ENTRYPOINT ["gpu-extender"]
CMD ["agent", "--help"]

FROM source AS webhook
RUN pip install --no-cache-dir '.[webhook]'
USER 65532
ENTRYPOINT ["gpu-extender"]
CMD ["webhook", "--help"]

# The default target (last): the scheduler extender, without NVML, gRPC or protobuf.
FROM source AS extender
RUN pip install --no-cache-dir '.[serve]'
USER 65532
ENTRYPOINT ["gpu-extender"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8888"]
