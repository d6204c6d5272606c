from tests.server.conftest import offline_service  # noqa: F401 (fixture)
