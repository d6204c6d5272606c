"""A clock the test moves by hand (``clock.now += 5``), for TTLs and rate limits."""


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
