"""The live event log and each event's webhook deliveries."""
