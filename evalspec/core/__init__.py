"""The ground floor: errors and exit codes, text that treats Chinese and English alike, secret
redaction, calling the user's code safely, loading plugins and `FILE.py:function` references, Ctrl-C.
It imports nothing else from evalspec."""
