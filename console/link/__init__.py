"""The Link flow: the screens a person goes through, as one state machine."""
