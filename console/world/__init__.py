"""The deterministic simulated world: payroll platforms, employers, people, payroll records, benefits."""
