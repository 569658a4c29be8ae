"""ioc: inversion-of-control batch task engine for Ansible-style playbooks."""
__version__ = "0.1.0"
