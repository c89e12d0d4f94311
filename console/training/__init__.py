"""Training mode: exercises checked against what really happened in a trainee's workspace, cohorts, the trainer's grid."""
