"""The runtime: nodes, the turn loop, delegation, runs and pauses, sessions, agents."""
