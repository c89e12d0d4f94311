"""Workspace time: business-day arithmetic on the US federal calendar."""
