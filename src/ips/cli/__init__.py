"""`ips <command>`: `main.py` builds the parser; one module per command registers its
options (`_add_<command>`) and its handler, which parses and calls the library."""
