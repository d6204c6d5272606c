from tests.server.conftest import client, offline_service  # noqa: F401 (fixtures)
