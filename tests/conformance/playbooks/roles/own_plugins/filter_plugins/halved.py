from __future__ import annotations


def halved(value):
    return value // 2


class FilterModule:
    def filters(self):
        return {"halved": halved}
