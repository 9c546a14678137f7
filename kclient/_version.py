"""kclient's version: the one place it is written (the package, ApiVersions'
client_software_version, the CLI's --version)."""

__version__ = "0.1.0"
