"""Training mode's pages: cohorts, the live grid, joining, a trainee's exercises."""
