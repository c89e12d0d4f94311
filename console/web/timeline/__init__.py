"""Job timelines per Link token and per account, live."""
