from tests.server.conftest import client, offline_service  # noqa: F401 (fixtures)
from tests.server.test_serve_offline import server  # noqa: F401 (fixture)
