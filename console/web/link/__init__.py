"""Link from the console: the Link token form and its presets, what to type at each step, and the token strings the console keeps to open Link."""
