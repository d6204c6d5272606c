from tests.server.test_serve_offline import server  # noqa: F401 (fixture)
