from __future__ import annotations


def divisible_by(value, divisor):
    return value % divisor == 0


class TestModule:
    def tests(self):
        return {"divisible_by": divisible_by}
