"""Files the training room downloads from the server (pcc.py: listen, trigger and verify, stdlib only)."""
