"""The outside: the Python API (`evalspec.run`), the command line, the pytest plugin, `evalspec view`."""
