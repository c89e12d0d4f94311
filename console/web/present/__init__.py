"""Presenter mode's pages: the stage, the story actions it performs, Link driven in the phone, demo profiles."""
