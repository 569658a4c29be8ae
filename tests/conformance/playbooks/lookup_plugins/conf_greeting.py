# A lookup whose option is read from a variable (the vars of its documented
# option), as community collections' lookups read their settings
# (community.hashi_vault's ansible_hashi_vault_url...).
from __future__ import annotations

DOCUMENTATION = """
    name: conf_greeting
    short_description: greets each term with a word its option gives
    description: greets each term with a word its option gives
    options:
      _terms:
        description: names
      greeting:
        description: the word
        default: hello
        vars:
          - name: conf_greeting_word
"""

from ansible.plugins.lookup import LookupBase


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return ["%s %s" % (self.get_option("greeting"), term) for term in terms]
