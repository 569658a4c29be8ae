"""The mitogen_batch bridge and Ansible-side helpers (the only package that imports ansible)."""
