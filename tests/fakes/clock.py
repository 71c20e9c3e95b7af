"""An injected clock for tests (Unix seconds, like time.time): it stands still until moved."""

START = 1_800_000_000.0  # an arbitrary time: tests never read the real clock


class Clock:
    """Stands still until a test moves it."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
