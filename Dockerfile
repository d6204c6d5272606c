# gpu-extender image: `docker build -t gpu-extender:0.1.0 .`
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY extender ./extender
RUN pip install --no-cache-dir . && useradd --uid 65532 --no-create-home extender
USER 65532
ENTRYPOINT ["gpu-extender"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8888"]
