"""Link tokens: what a backend creates so a person can open Link."""
