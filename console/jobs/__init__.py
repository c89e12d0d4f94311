"""Jobs (direct deposit switches) and their one state machine."""
