from __future__ import annotations


class FilterModule(object):
    def filters(self):
        return {'role_parse_ip': self.parse_ip}

    def parse_ip(self, ip):
        return ip
