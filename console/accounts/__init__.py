"""Payroll accounts a person connected through Link."""
